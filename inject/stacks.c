// SPDX-License-Identifier: MIT
/*
 * Call stacks: capture (hot path, lock-free, allocation-free) and
 * symbolization (drain thread, cached). See inject/stacks.h.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "inject/config.h"
#include "inject/stacks.h"

/* Distinct stacks kept, and PCs stored for them (a slot's PCs live in the
 * pool). Sized for real programs: launch sites number in the hundreds. The
 * table has twice the slots: never more than half full, a stack not in it
 * is known absent after a few probes (in a full table, every call from a
 * new site looked at each slot: 16384 of them). */
#ifndef GT_STACK_KEPT
#define GT_STACK_KEPT (1u << 14)
#endif
#define GT_STACK_SLOTS (2 * GT_STACK_KEPT)
#ifndef GT_STACK_POOL
#define GT_STACK_POOL (1u << 19)
#endif
#define OWN_FRAMES   16 /* room for our own frames above the caller's */
#define VENDOR_FRAMES 48 /* and for a vendor library's, inside its callbacks */
#define SKIP_MAX     16 /* vendor libraries' code ranges */
#define NAME_TAG     (1ull << 63) /* a PC that is an API's name (string id) */
#define READY_SPINS  4096

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() do { } while (0)
#endif

_Static_assert((GT_STACK_KEPT & (GT_STACK_KEPT - 1)) == 0, "power of two");

/* The unit tests count the slots looked at (a build of their own) */
#ifdef GT_STACK_COUNT_PROBES
uint64_t stacks_probes;
#define PROBED() (stacks_probes++)
#else
#define PROBED() ((void)0)
#endif

enum { SLOT_WRITING = 0, SLOT_READY, SLOT_INVALID };

struct stack_slot {
	_Atomic uint64_t hash; /* 0: free; claimed by compare-and-swap */
	_Atomic uint32_t state;
	uint32_t off;          /* first PC in the pool */
	uint32_t depth;
	uint32_t epoch;        /* S.epoch when taken: which libraries its PCs are in */
};

typedef int (*unw_backtrace_fn)(void **buffer, int size);

/* Everything a capture reads, made whole before it is published. */
struct table {
	unw_backtrace_fn backtrace;
	uintptr_t self_lo, self_hi; /* our own text, skipped in stacks */
	struct stack_slot slots[GT_STACK_SLOTS];
	uintptr_t pool[GT_STACK_POOL];
};

static struct {
	struct table *_Atomic table; /* NULL until set up */
	_Atomic int failed;          /* -errno once set-up failed (said once) */
	_Atomic uint32_t pool_used;
	_Atomic uint32_t slots_taken; /* at most GT_STACK_KEPT */
	_Atomic int writing;         /* slots claimed, not yet stored */
	_Atomic uint64_t dropped;
	_Atomic uint64_t count;
	/* Bumped when a dlclose begins (stacks__dlclose_begin): a library
	 * loaded later at a closed one's address gives its PCs a new meaning,
	 * so a stack is the same only within one epoch. */
	_Atomic uint32_t epoch;
	/* New stacks claimed since the last dlclose began: none, and no stack
	 * is of the epoch that dlclose ends, which needs no record then (a
	 * record of what was loaded at every dlclose grew without bound: a
	 * program that opened and closed a library 40000 times kept 110 MB) */
	_Atomic uint64_t fresh;
	/* vendor libraries' text, skipped by gt_stack_capture_api */
	struct {
		_Atomic uintptr_t lo, hi;
	} skip[SKIP_MAX];
	_Atomic unsigned nskip;
} S;

/* ---- setup (cold) ---- */

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	struct table *t = data;
	uintptr_t me = (uintptr_t)&stacks__init;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (me >= lo && me < lo + ph->p_memsz) {
			t->self_lo = lo;
			t->self_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

static int setup_failed(int err)
{
	int none = 0;

	if (atomic_compare_exchange_strong(&S.failed, &none, err)) {
		if (err == -ENOENT)
			pr_err("GPUTRACE_STACKS: libunwind.so.8 (with unw_backtrace) not found; "
			       "install libunwind8 for call stacks. Tracing goes on without them");
		else
			pr_err("GPUTRACE_STACKS: no memory for the stack table; no call stacks");
	}
	return err;
}

/*
 * No thread waits for another's set-up: each one that finds no table makes
 * its own, and the first to publish it wins (the others unmap theirs). A
 * wait could be endless (the waiter holding the loader lock the other's
 * dlopen needs: a traced call from a library constructor) and a bounded
 * one drops the first stacks whenever a loaded machine does not run the
 * setting-up thread in time. dlopen is thread-safe and gives every caller
 * the one handle; the untouched table costs only its mapping.
 */
int stacks__init(void)
{
	struct table *t = atomic_load_explicit(&S.table, memory_order_acquire), *none = NULL;
	int failed = atomic_load_explicit(&S.failed, memory_order_relaxed);
	unw_backtrace_fn backtrace;
	void *lib;

	if (t)
		return 0;
	if (failed)
		return failed;
	lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		lib = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
	backtrace = lib ? (unw_backtrace_fn)dlsym(lib, "unw_backtrace") : NULL;
	if (!backtrace)
		return setup_failed(-ENOENT);
	/* Pages of the pool are only touched as stacks arrive. */
	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (t == MAP_FAILED)
		return setup_failed(-ENOMEM);
	t->backtrace = backtrace;
	dl_iterate_phdr(find_self, t);
	if (!atomic_compare_exchange_strong_explicit(&S.table, &none, t, memory_order_acq_rel,
						     memory_order_acquire)) {
		munmap(t, sizeof(*t));
		return 0;
	}
	return 0;
}

/* ---- capture (hot) ---- */

/* The table, set up by the first capture unless stacks__init ran at start. */
static struct table *table(void)
{
	struct table *t = atomic_load_explicit(&S.table, memory_order_acquire);

	if (gt_likely(t) || stacks__init())
		return t;
	return atomic_load_explicit(&S.table, memory_order_acquire);
}

static uint64_t hash_pcs(const uintptr_t *pcs, unsigned n, uint32_t epoch)
{
	uint64_t h = (0xcbf29ce484222325ull ^ n) + ((uint64_t)epoch << 32);

	for (unsigned i = 0; i < n; i++) {
		h ^= pcs[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

/* Store a claimed slot's stack; false when the PC pool is full. */
static bool fill(struct table *t, struct stack_slot *s, const uintptr_t *pcs, unsigned n,
		 uint32_t epoch)
{
	uint32_t off = atomic_fetch_add_explicit(&S.pool_used, n, memory_order_relaxed);

	if (off > GT_STACK_POOL - n) {
		/* the slot stays claimed but never matches; the frames go back
		 * (every stored stack lies below any failed reservation, so the
		 * pool's end never falls below one) for a shorter stack that fits */
		atomic_fetch_sub_explicit(&S.pool_used, n, memory_order_relaxed);
		atomic_store_explicit(&s->state, SLOT_INVALID, memory_order_release);
		return false;
	}
	memcpy(&t->pool[off], pcs, n * sizeof(*pcs));
	s->off = off;
	s->depth = n;
	s->epoch = epoch;
	atomic_store_explicit(&s->state, SLOT_READY, memory_order_release);
	atomic_fetch_add_explicit(&S.count, 1, memory_order_relaxed);
	return true;
}

static uint64_t intern(struct table *t, const uintptr_t *pcs, unsigned n)
{
	/* relaxed: a library loaded after a dlclose began was loaded under
	 * ld.so's lock, which orders that begin's bump before this read */
	uint32_t epoch = atomic_load_explicit(&S.epoch, memory_order_relaxed);
	uint64_t h = hash_pcs(pcs, n, epoch);
	uint32_t i = (uint32_t)h & (GT_STACK_SLOTS - 1);

	/* Triangular steps (1, 2, 3, ...) visit every slot of a power-of-two
	 * table once, so a stack finds a free slot while any is left, and
	 * stacks that share a home slot do not pile up in one run. */
	for (uint32_t probe = 1; probe <= GT_STACK_SLOTS;
	     i = (i + probe++) & (GT_STACK_SLOTS - 1)) {
		struct stack_slot *s = &t->slots[i];
		uint64_t cur = atomic_load_explicit(&s->hash, memory_order_acquire);

		PROBED();
		if (cur == 0) {
			uint64_t zero = 0;
			int id = 0;

			/* No room for its frames: dropped without claiming the slot.
			 * A claimed slot that fails to fill is lost, and a dropped
			 * stack comes back at every call from its site: each call
			 * took another slot until none was left, and from then on
			 * every such call probed the whole table (a launch 2.8 us ->
			 * 129 us once deep stacks had filled the pool). */
			if (atomic_load_explicit(&S.pool_used, memory_order_relaxed) >
			    GT_STACK_POOL - n)
				break;
			/* GT_STACK_KEPT stacks stored: the rest are dropped at their
			 * first free slot, which the half-empty table keeps near */
			if (atomic_fetch_add_explicit(&S.slots_taken, 1, memory_order_relaxed) >=
			    GT_STACK_KEPT) {
				atomic_fetch_sub_explicit(&S.slots_taken, 1, memory_order_relaxed);
				break;
			}

			/* A new stack of this epoch: counted before the epoch is read
			 * again, as stacks__dlclose_begin bumps the epoch before it
			 * reads the count (both seq_cst), so that either it sees the
			 * count and keeps this epoch's record, or this sees the bump
			 * and stores the stack in the new epoch. */
			atomic_fetch_add(&S.fresh, 1);
			if (atomic_load(&S.epoch) != epoch) {
				atomic_fetch_sub_explicit(&S.slots_taken, 1, memory_order_relaxed);
				return intern(t, pcs, n);
			}
			/* counted while claimed and not yet ready: see stacks__fork_child */
			atomic_fetch_add(&S.writing, 1);
			if (atomic_compare_exchange_strong_explicit(&s->hash, &zero, h,
								    memory_order_acq_rel,
								    memory_order_acquire))
				id = fill(t, s, pcs, n, epoch) ? (int)i + 1 : -1;
			else
				atomic_fetch_sub_explicit(&S.slots_taken, 1, memory_order_relaxed);
			atomic_fetch_sub(&S.writing, 1);
			if (id > 0)
				return (uint64_t)id;
			if (id < 0)
				break;
			cur = zero; /* someone else claimed it: compare with theirs */
		}
		if (cur != h)
			continue;
		uint32_t st;
		unsigned spins = 0;

		/* Another thread is storing this very stack, and its id is ours
		 * too: wait until it is stored, however long a loaded machine
		 * keeps that thread off the CPU (giving up would store the stack
		 * again under a second id). The store takes no lock and makes
		 * no call; a fork child's copies of unfinished slots are
		 * invalidated by stacks__fork_child. */
		while ((st = atomic_load_explicit(&s->state, memory_order_acquire)) ==
		       SLOT_WRITING) {
			if (++spins < READY_SPINS)
				cpu_relax();
			else
				sched_yield();
		}
		if (st == SLOT_READY && s->depth == n && s->epoch == epoch &&
		    !memcmp(&t->pool[s->off], pcs, n * sizeof(*pcs)))
			return i + 1;
	}
	atomic_fetch_add_explicit(&S.dropped, 1, memory_order_relaxed);
	return 0;
}

uint64_t stacks__capture_depth(unsigned depth)
{
	void *frames[GT_STACKS_MAX_DEPTH + OWN_FRAMES];
	struct table *t = table();
	int n, first;

	if (gt_unlikely(!t)) {
		atomic_fetch_add_explicit(&S.dropped, 1, memory_order_relaxed);
		return 0;
	}
	if (depth == 0)
		return 0;
	if (depth > GT_STACKS_MAX_DEPTH)
		depth = GT_STACKS_MAX_DEPTH;
	n = t->backtrace(frames, (int)depth + OWN_FRAMES);
	if (n <= 0) {
		atomic_fetch_add_explicit(&S.dropped, 1, memory_order_relaxed);
		return 0;
	}
	/* Skip our frames, but keep the outermost of them: the API entry
	 * point the program called (an exported wrapper named like the API). */
	for (first = 0; first < n; first++) {
		uintptr_t pc = (uintptr_t)frames[first];

		if (pc < t->self_lo || pc >= t->self_hi)
			break;
	}
	if (first > 0 && first < n)
		first--;
	else if (first == n)
		first = n > 1 ? 1 : 0; /* called from our own thread: all of it */
	n -= first;
	if ((unsigned)n > depth)
		n = (int)depth;
	return intern(t, (const uintptr_t *)&frames[first], (unsigned)n);
}

int stacks__backtrace_now(void **pcs, int max)
{
	struct table *t = atomic_load_explicit(&S.table, memory_order_acquire);
	int n, first = 0;

	if (!t || max <= 0)
		return 0;
	n = t->backtrace(pcs, max);
	/* our handler's frames, and the signal trampoline after them */
	while (first < n && (uintptr_t)pcs[first] >= t->self_lo &&
	       (uintptr_t)pcs[first] < t->self_hi)
		first++;
	if (first > 0 && first < n)
		first++;
	if (first >= n)
		return 0;
	for (int i = first; i < n; i++)
		pcs[i - first] = pcs[i];
	return n - first;
}

uint64_t stacks__intern_pcs(const uintptr_t *pcs, unsigned n)
{
	struct table *t = table();

	if (!t || !n)
		return 0;
	return intern(t, pcs, n > GT_STACKS_MAX_DEPTH ? GT_STACKS_MAX_DEPTH : n);
}

uint64_t gt_stack_capture(void)
{
	return gt_cfg.stacks ? stacks__capture_depth(gt_cfg.stacks) : 0;
}

static bool vendor_pc(const struct table *t, uintptr_t pc)
{
	unsigned n = atomic_load_explicit(&S.nskip, memory_order_acquire);

	if (pc >= t->self_lo && pc < t->self_hi)
		return true;
	for (unsigned i = 0; i < n; i++)
		if (pc >= atomic_load_explicit(&S.skip[i].lo, memory_order_relaxed) &&
		    pc < atomic_load_explicit(&S.skip[i].hi, memory_order_relaxed))
			return true;
	return false;
}

uint64_t gt_stack_capture_api(uint32_t api_name)
{
	void *frames[GT_STACKS_MAX_DEPTH + OWN_FRAMES + VENDOR_FRAMES];
	unsigned depth = gt_cfg.stacks;
	struct table *t;
	int n, first;

	if (!depth)
		return 0;
	t = table();
	if (gt_unlikely(!t)) {
		atomic_fetch_add_explicit(&S.dropped, 1, memory_order_relaxed);
		return 0;
	}
	if (depth > GT_STACKS_MAX_DEPTH)
		depth = GT_STACKS_MAX_DEPTH;
	n = t->backtrace(frames, (int)depth + OWN_FRAMES + VENDOR_FRAMES);
	for (first = 0; first < n && vendor_pc(t, (uintptr_t)frames[first]); first++)
		;
	if (n <= 0 || first == 0 || first == n)
		return stacks__capture_depth(depth); /* not inside a vendor's callback */
	/* the API takes the slot of the innermost vendor frame */
	first--;
	frames[first] = (void *)(uintptr_t)(NAME_TAG | api_name);
	n -= first;
	if ((unsigned)n > depth)
		n = (int)depth;
	return intern(t, (const uintptr_t *)&frames[first], (unsigned)n);
}

struct skip_scan {
	const char *const *prefixes;
};

static int add_skipped(struct dl_phdr_info *info, size_t size, void *data)
{
	const struct skip_scan *scan = data;
	const char *path = info->dlpi_name, *base;
	bool match = false;

	if (!path || !*path)
		return 0;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (const char *const *p = scan->prefixes; *p && !match; p++)
		match = !strncmp(base, *p, strlen(*p));
	if (!match)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		unsigned n = atomic_load_explicit(&S.nskip, memory_order_relaxed), k;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		for (k = 0; k < n && atomic_load_explicit(&S.skip[k].lo, memory_order_relaxed) != lo;
		     k++)
			;
		if (k < n || n == SKIP_MAX)
			continue;
		atomic_store_explicit(&S.skip[n].lo, lo, memory_order_relaxed);
		atomic_store_explicit(&S.skip[n].hi, hi, memory_order_relaxed);
		atomic_store_explicit(&S.nskip, n + 1, memory_order_release);
	}
	return 0;
}

void stacks__skip_libraries(const char *const *prefixes)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct skip_scan scan = { prefixes };

	pthread_mutex_lock(&lock);
	dl_iterate_phdr(add_skipped, &scan);
	pthread_mutex_unlock(&lock);
}

uint64_t stacks__dropped(void)
{
	return atomic_load_explicit(&S.dropped, memory_order_relaxed);
}

uint64_t stacks__count(void)
{
	return atomic_load_explicit(&S.count, memory_order_relaxed);
}

/* ---- symbolization (cold, drain thread) ---- */

struct sym {
	uintptr_t start, size;
	const char *name;
};

/* One object loaded at one address, and its ELF symbol table (.symtab when
 * not stripped: static and hidden functions too; else .dynsym), read from
 * its file at the first lookup (still there after a dlclose). */
struct module {
	struct module *next;
	uintptr_t bias;
	char *path;
	const char *base;
	struct sym *syms;
	size_t nsyms;
	bool read;
};

/* A frame's name in one epoch (see S.epoch): the same PC may be another
 * library's after a dlclose. */
struct pc_name {
	uintptr_t pc;
	uint32_t epoch;
	char *name;
};

static struct {
	pthread_mutex_t lock;
	struct module *modules;
	struct pc_name *names; /* open addressing; pc 0 = free */
	size_t cap, used;
} Y = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* A loaded object's addresses when an epoch ended. */
struct span {
	uintptr_t lo, hi, bias;
	char *path; /* dlpi_name: "" for the main program */
};

/* What was loaded when an epoch ended (a dlclose began): the stacks of that
 * epoch are named from it. An epoch whose dlclose unloaded nothing goes on
 * as the one before it (same_as). */
struct epoch_rec {
	struct epoch_rec *next;
	uint32_t tag, same_as;
	size_t n;
	struct span *spans;
};

/* Taken inside dlclose, where ld.so may hold its lock (a destructor closing
 * a library): never held while calling into ld.so (dladdr), nor while
 * waiting for Y.lock; taken after Y.lock. */
static struct {
	pthread_mutex_t lock;
	struct epoch_rec *recs;
	uint32_t last_tag;
} E = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The drain thread may have been symbolizing when another thread forked:
 * the child starts with a fresh lock and empty caches (the old ones are
 * left as they are, possibly half-updated; a little memory). The captured
 * stacks themselves stay valid: addresses do not change across fork. */
/* From lifecycle.c's child handler, not a pthread_atfork of our own: glibc
 * unregisters an object's handlers in its __cxa_finalize, before the exit's last
 * drain, and a child forked then kept the locks a parent's thread held. */
void stacks__fork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	struct table *t = atomic_load(&S.table);

	if (!t)
		return; /* nothing taken yet: the child's pages stay shared */

	/* A slot another thread was storing when this one forked is never
	 * finished here: the one thread of the child must not wait on it
	 * (rare: a scan only when a store was under way). */
	if (atomic_exchange(&S.writing, 0))
		for (uint32_t i = 0; i < GT_STACK_SLOTS; i++)
			if (atomic_load(&t->slots[i].hash) &&
			    atomic_load(&t->slots[i].state) == SLOT_WRITING)
				atomic_store(&t->slots[i].state, SLOT_INVALID);

	Y.lock = fresh;
	E.lock = fresh; /* its records stay: the addresses they name are the same */
	Y.modules = NULL;
	Y.names = NULL;
	Y.cap = Y.used = 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

static void module__load_syms(struct module *m)
{
	int fd = open(m->path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	const unsigned char *map;
	const ElfW(Ehdr) *eh;
	const ElfW(Shdr) *sh, *symtab = NULL;

	if (fd < 0)
		return;
	if (fstat(fd, &st) || st.st_size < (off_t)sizeof(ElfW(Ehdr))) {
		close(fd);
		return;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;
	/* The mapping stays: symbol names point into it. */
	eh = (const ElfW(Ehdr) *)map;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr)) > (uint64_t)st.st_size)
		return;
	sh = (const ElfW(Shdr) *)(map + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type == SHT_SYMTAB)
			symtab = &sh[i];
		else if (sh[i].sh_type == SHT_DYNSYM && !symtab)
			symtab = &sh[i];
	}
	if (!symtab || symtab->sh_link >= eh->e_shnum || !symtab->sh_entsize ||
	    symtab->sh_offset + symtab->sh_size > (uint64_t)st.st_size)
		return;
	const ElfW(Shdr) *strs = &sh[symtab->sh_link];
	if (strs->sh_offset + strs->sh_size > (uint64_t)st.st_size)
		return;
	const ElfW(Sym) *syms = (const ElfW(Sym) *)(map + symtab->sh_offset);
	size_t n = symtab->sh_size / symtab->sh_entsize, k = 0;
	const char *strtab = (const char *)map + strs->sh_offset;

	m->syms = calloc(n ? n : 1, sizeof(*m->syms));
	if (!m->syms)
		return;
	for (size_t i = 0; i < n; i++) {
		unsigned type = ELF64_ST_TYPE(syms[i].st_info);

		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || syms[i].st_shndx == SHN_UNDEF ||
		    !syms[i].st_value || syms[i].st_name >= strs->sh_size)
			continue;
		m->syms[k].start = syms[i].st_value;
		m->syms[k].size = syms[i].st_size;
		m->syms[k].name = strtab + syms[i].st_name;
		k++;
	}
	m->nsyms = k;
	qsort(m->syms, k, sizeof(*m->syms), cmp_sym);
}

static struct module *module_get(uintptr_t bias, const char *name)
{
	/* The main program has no name here: read it through /proc. */
	const char *path = name && *name ? name : "/proc/self/exe";
	struct module *m;

	for (m = Y.modules; m; m = m->next)
		if (m->bias == bias && !strcmp(m->path, path))
			return m;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->path = strdup(path);
	if (!m->path) {
		free(m);
		return NULL;
	}
	m->bias = bias;
	if (name && *name) {
		const char *slash = strrchr(m->path, '/');

		m->base = slash ? slash + 1 : m->path;
	} else {
		m->base = program_invocation_short_name;
	}
	m->next = Y.modules;
	Y.modules = m;
	return m;
}

struct find_ctx {
	uintptr_t addr;
	struct module *m;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find_ctx *c = data;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && c->addr >= lo && c->addr < lo + ph->p_memsz) {
			c->m = module_get(info->dlpi_addr, info->dlpi_name);
			return 1;
		}
	}
	return 0;
}

/* The object that holds addr now. */
static struct module *module_of(uintptr_t addr)
{
	struct find_ctx c = { .addr = addr };

	dl_iterate_phdr(find_object, &c);
	return c.m;
}

static const char *module__lookup(struct module *m, uintptr_t addr)
{
	uintptr_t rel = addr - m->bias;
	size_t lo = 0, hi;

	if (!m->read) {
		m->read = true;
		module__load_syms(m);
	}
	hi = m->nsyms;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->syms[mid].start <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct sym *s = &m->syms[lo - 1];
	if (s->size && rel >= s->start + s->size)
		return NULL;
	return s->name;
}

typedef char *(*demangle_fn)(const char *mangled, char *out, size_t *len, int *status);

/* addr's name: sym (exported, from dladdr) or m's symbol table, demangled;
 * else module+0xoffset; else the bare address. */
static char *name_in(struct module *m, uintptr_t addr, const char *sym)
{
	char *out;

	if (!sym && m)
		sym = module__lookup(m, addr);
	if (sym) {
		static demangle_fn demangle;
		static bool looked;
		int status = -1;

		if (!looked) {
			demangle = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
			looked = true;
		}
		if (sym[0] == '_' && sym[1] == 'Z' && demangle) {
			out = demangle(sym, NULL, NULL, &status);
			if (out && !status) {
				char *clone = strstr(out, " [clone ");

				if (clone)
					*clone = 0;
				return out;
			}
			free(out);
		}
		/* GCC's clones (run.isra.0, f.part.1, g.cold) are the source
		 * function: C names have no dots. */
		return strndup(sym, strcspn(sym, "."));
	}
	if (m && asprintf(&out, "%s+0x%lx", m->base, (unsigned long)(addr - m->bias)) >= 0)
		return out;
	if (asprintf(&out, "0x%lx", (unsigned long)addr) >= 0)
		return out;
	return NULL;
}

/* A return address: the call is the instruction before it. */
static char *name_now(uintptr_t addr)
{
	Dl_info info;
	const char *sym = NULL;

	/* Exported names first (our API wrappers are known by them), then the
	 * full symbol table for static and hidden functions. */
	if (dladdr((void *)addr, &info) && info.dli_sname && info.dli_saddr)
		sym = info.dli_sname;
	return name_in(module_of(addr), addr, sym);
}

/* The name addr had in an ended epoch, from what was loaded then (the
 * span copied out of E, under E.lock). */
static char *name_then(const struct span *sp, uintptr_t addr)
{
	return name_in(sp ? module_get(sp->bias, sp->path) : NULL, addr, NULL);
}

static struct pc_name *name_slot(uint32_t epoch, uintptr_t pc)
{
	size_t i, mask;

	if (Y.used * 2 >= Y.cap) {
		size_t ncap = Y.cap ? Y.cap * 2 : 1024;
		struct pc_name *n = calloc(ncap, sizeof(*n));

		if (!n)
			return NULL;
		for (size_t k = 0; k < Y.cap; k++) {
			if (!Y.names[k].pc)
				continue;
			for (i = ((Y.names[k].pc >> 4) ^ Y.names[k].epoch * 0x9e3779b9u) & (ncap - 1);
			     n[i].pc; i = (i + 1) & (ncap - 1))
				;
			n[i] = Y.names[k];
		}
		free(Y.names);
		Y.names = n;
		Y.cap = ncap;
	}
	mask = Y.cap - 1;
	for (i = ((pc >> 4) ^ epoch * 0x9e3779b9u) & mask; Y.names[i].pc; i = (i + 1) & mask)
		if (Y.names[i].pc == pc && Y.names[i].epoch == epoch)
			break;
	return &Y.names[i];
}

static const char *remember(struct pc_name *slot, uint32_t epoch, uintptr_t pc, char *name)
{
	slot->pc = pc;
	slot->epoch = epoch;
	slot->name = name;
	Y.used++;
	return name ? name : "?";
}

/* The epoch tag stands for (past the ones whose dlclose unloaded nothing),
 * and its record when that epoch has ended. Under E.lock. */
static uint32_t epoch_of(uint32_t tag, const struct epoch_rec **rec)
{
	for (;;) {
		const struct epoch_rec *r = E.recs;

		while (r && r->tag != tag)
			r = r->next;
		if (!r || r->same_as == tag) {
			*rec = r;
			return tag;
		}
		tag = r->same_as; /* always an earlier tag: this ends */
	}
}

/* The span of rec that holds addr, copied into sp (its path into buf). */
static bool span_of(const struct epoch_rec *rec, uintptr_t addr, struct span *sp, char *buf,
		    size_t len)
{
	for (size_t i = 0; rec && i < rec->n; i++) {
		if (addr < rec->spans[i].lo || addr >= rec->spans[i].hi)
			continue;
		*sp = rec->spans[i];
		snprintf(buf, len, "%s", sp->path);
		sp->path = buf;
		return true;
	}
	return false;
}

/*
 * The name of a frame of a stack taken in epoch tag, cached per epoch. The
 * current epoch's are read from the address space as it is; one that
 * changed while we read (a dlclose began) is read again from the record of
 * what was loaded when it ended. An address in no object then stays bare.
 */
static const char *frame_name(uint32_t tag, uintptr_t pc)
{
	uintptr_t addr = pc - 1;
	char path[PATH_MAX];

	for (;;) {
		const struct epoch_rec *rec;
		struct pc_name *slot;
		struct span sp;
		bool ended, found = false;
		uint32_t epoch;
		char *name;

		pthread_mutex_lock(&E.lock);
		epoch = epoch_of(tag, &rec);
		ended = epoch != atomic_load(&S.epoch);
		if (ended)
			found = span_of(rec, addr, &sp, path, sizeof(path));
		pthread_mutex_unlock(&E.lock);
		slot = name_slot(epoch, pc);
		if (!slot)
			return "?";
		if (slot->pc)
			return slot->name ? slot->name : "?";
		if (ended)
			return remember(slot, epoch, pc, name_then(found ? &sp : NULL, addr));
		name = name_now(addr);
		if (atomic_load(&S.epoch) == epoch)
			return remember(slot, epoch, pc, name);
		free(name); /* it ended while we read: its record has it */
	}
}

/* ---- dlclose (cold): end the epoch, keep what was loaded ---- */

struct snapshot {
	struct span *v;
	size_t n, cap;
};

static int snapshot_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct snapshot *sn = data;
	uintptr_t lo = UINTPTR_MAX, hi = 0;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t seg = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		if (seg < lo)
			lo = seg;
		if (seg + ph->p_memsz > hi)
			hi = seg + ph->p_memsz;
	}
	if (!hi)
		return 0;
	if (sn->n == sn->cap) {
		size_t ncap = sn->cap ? sn->cap * 2 : 64;
		struct span *v = realloc(sn->v, ncap * sizeof(*v));

		if (!v)
			return 1;
		sn->v = v;
		sn->cap = ncap;
	}
	sn->v[sn->n].path = strdup(info->dlpi_name ? info->dlpi_name : "");
	if (!sn->v[sn->n].path)
		return 1;
	sn->v[sn->n].lo = lo;
	sn->v[sn->n].hi = hi;
	sn->v[sn->n].bias = info->dlpi_addr;
	sn->n++;
	return 0;
}

static int read_subs(struct dl_phdr_info *info, size_t size, void *data)
{
	*(unsigned long long *)data = info->dlpi_subs;
	return 1;
}

static unsigned long long unloads(void)
{
	unsigned long long subs = 0;

	dl_iterate_phdr(read_subs, &subs);
	return subs;
}

static void spans_free(struct epoch_rec *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->spans[i].path);
	free(r->spans);
	r->spans = NULL;
	r->n = 0;
}

void stacks__dlclose_begin(struct stacks_dlclose *c)
{
	struct epoch_rec *r;
	struct snapshot sn = { 0 };

	c->bumped = false;
	if (!atomic_load_explicit(&S.table, memory_order_acquire))
		return; /* no stack yet, none to name */
	r = calloc(1, sizeof(*r));
	pthread_mutex_lock(&E.lock);
	c->subs = unloads();
	c->before = atomic_load(&S.epoch);
	c->after = ++E.last_tag;
	/* before the library goes: no stack taken from now on is the old
	 * epoch's, so what is loaded now names all of those */
	atomic_store(&S.epoch, c->after);
	c->bumped = true;
	/* no stack of the old epoch (none new since the last dlclose began,
	 * see intern): nothing to name from a record of it */
	c->recorded = atomic_exchange(&S.fresh, 0) != 0;
	if (!c->recorded) {
		free(r);
		r = NULL;
	}
	if (r) {
		dl_iterate_phdr(snapshot_object, &sn);
		r->tag = r->same_as = c->before;
		r->spans = sn.v;
		r->n = sn.n;
		r->next = E.recs;
		E.recs = r;
	}
	pthread_mutex_unlock(&E.lock);
}

void stacks__dlclose_end(const struct stacks_dlclose *c)
{
	uint32_t after = c->after;

	/* Not recorded: the old epoch had no stack, and the new one goes on
	 * (its stacks are named from what is loaded, as the old one's would). */
	if (!c->bumped || !c->recorded)
		return;
	pthread_mutex_lock(&E.lock);
	/* Nothing was unloaded (the library is still open elsewhere) and no
	 * other dlclose began: the old epoch goes on, and stacks taken
	 * meanwhile are its (their call sites keep one stack each), through
	 * the record, which stays for them only: where none was taken (none
	 * counted after the epoch went back, see intern), it goes (a
	 * program that opens and closes an open library at every call kept
	 * one per call). The old epoch has stacks: the next dlclose keeps
	 * a record of it again (fresh is 1). */
	if (unloads() == c->subs &&
	    atomic_compare_exchange_strong(&S.epoch, &after, c->before)) {
		bool taken = atomic_exchange(&S.fresh, 1) != 0;

		for (struct epoch_rec **p = &E.recs; *p; p = &(*p)->next) {
			struct epoch_rec *r = *p;

			if (r->tag != c->before || r->same_as != c->before)
				continue;
			spans_free(r);
			if (taken) {
				r->tag = c->after;
			} else {
				*p = r->next;
				free(r);
			}
			break;
		}
	}
	pthread_mutex_unlock(&E.lock);
}

int stacks__format(uint64_t id, char *buf, size_t len)
{
	const char *names[GT_STACKS_MAX_DEPTH];
	const struct table *t = atomic_load_explicit(&S.table, memory_order_acquire);
	const struct stack_slot *s;
	size_t total = 0, pos = 0;
	unsigned n, skip = 0;

	if (!len || !id || id > GT_STACK_SLOTS || !t)
		return -1;
	s = &t->slots[id - 1];
	if (atomic_load_explicit((_Atomic uint32_t *)&s->state, memory_order_acquire) != SLOT_READY)
		return -1;
	n = s->depth > GT_STACKS_MAX_DEPTH ? GT_STACKS_MAX_DEPTH : s->depth;

	pthread_mutex_lock(&Y.lock);
	/* pool[0] is the innermost frame: names[] is outermost first */
	for (unsigned i = 0; i < n; i++) {
		uintptr_t pc = t->pool[s->off + i];
		const char *api = pc & NAME_TAG ? gt_str_get((uint32_t)pc, NULL) : NULL;

		names[n - 1 - i] = pc & NAME_TAG ? (api ? api : "?") : frame_name(s->epoch, pc);
		total += strlen(names[n - 1 - i]) + 1;
	}
	/* Too long: drop outer frames, keep the ones nearest the call. */
	while (skip < n - 1 && total + (skip ? 4 : 0) > len) {
		total -= strlen(names[skip]) + 1;
		skip++;
	}
	if (skip)
		pos += (size_t)snprintf(buf, len, "...;");
	for (unsigned i = skip; i < n && pos < len; i++)
		pos += (size_t)snprintf(buf + pos, len - pos, "%s%s", names[i], i + 1 < n ? ";" : "");
	pthread_mutex_unlock(&Y.lock);
	if (pos >= len) {
		buf[len - 1] = 0;
		pos = len - 1;
	}
	return (int)pos;
}
