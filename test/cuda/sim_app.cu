// SPDX-License-Identifier: MIT
// A CUDA program for the simulated CUDA stack (test/cuda/sim): built with
// nvcc -cudart shared, run with LD_LIBRARY_PATH pointing at the simulator.
// Kernels take grid*block ns there, copies and fills bytes/10 ns, so a test
// knows every duration. One mode per argument:
//   basic          copies of every kind, a fill, kernels on two streams, NVTX,
//                  a graph captured and launched twice, event and device syncs
//   signal SIG     kernels, a sync, a long kernel, then raise(SIGTERM|SIGINT)
//   fork           kernels, a fork() whose child tries CUDA, more kernels
//   fork idle      the same, but the child makes no CUDA call and calls exit(0) (a
//                  DataLoader's worker)
//   getters        cudaGetDevice three times and nothing else: only folded calls, so the
//                  trace's one event comes at the end
//   exec           kernels, then a child exec'd without LD_PRELOAD ("child")
//   capture        a global-mode capture while earlier work is still running
//   stacks         launches from nested functions
//   runtimes       CUDA 13 here, CUDA 12 in librt12.so (dlopen'ed)
//   clock [N [MS [B]]] N (30) bursts of B (1) kernels of 20 us, each burst synchronized,
//                  MS (40) ms apart
//   reload [N]     N (25000) kernels of libreload.so (dlopen'ed), then dlclose
//   threads        4 threads, each 5 kernels of its own shape on its own stream
//   nvtx           3 NVTX "step" ranges (nested "fwd": 2 kernels of 256 ns, "bwd": one of
//                  64 ns, popped before the kernels end), "idle" (no kernel), then a
//                  "worker" range on each of two threads, one after the other (1024 and
//                  2048 ns)
//   nvtx overlap   two threads' "overlap" ranges open at once, a 1024 ns kernel each
//   nvtx exit N    nvtx, then exit status N (a flight recorder's dump)
//   nvtx leave     a thread's "leaver" range (a scale of 1024 ns, synchronized) still
//                  open when the thread ends; then main's 3 "after" ranges, an axpy of
//                  512 ns each
//   shared SEQ     one created stream shared by threads: per letter of SEQ, one scale of
//                  1024 ns, one after the other, launched by the main thread inside the
//                  NVTX ranges "main" and, nested, letter + index ("M0"), or by a new
//                  thread of that name that then ends, inside that range (W) or none (w);
//                  synchronized once at the end
//   turns SEQ      one created stream, two threads A and B each inside an NVTX range of
//                  its name ("A", and nested in it "B" for B's: "B" > "b") the whole time,
//                  taking turns: per letter of SEQ, that thread launches one scale of 1024
//                  ns; synchronized once at the end
//   wait MS        a kernel of MS ms on a stream of its own, waited for by
//                  wait_for_stream() (cudaStreamSynchronize)
//   hang           kernels that finish (2 axpy on stream A and a scale on B,
//                  synchronized; then an axpy on A, not), then a spin of 18
//                  minutes on B with an axpy queued behind it, and a scale of
//                  18 minutes on a third stream C; waits for B in
//                  wait_for_stream() (the watchdog's CUDA hang)
//   hang copies    two GPUs (CUDA_SIM_DEVICES=2): a spin of 18 minutes on a stream, and
//                  queued behind it a cudaMemcpy2DAsync HtoD, a cudaMemset2DAsync and a
//                  cudaMemcpyPeerAsync to GPU 1; waits for the stream in wait_for_stream()
//   graphcalls     cudaStreamGetId, a capture of one 64 ns kernel, cudaGraphGetNodes, the
//                  graph instantiated twice (cudaGraphInstantiate[WithFlags]), launched once
//   cold           the process's first CUDA call is cudaMallocHost, then a 64 ns
//                  kernel on pinned memory, synchronized
//   queue N [T]    T (1) threads, each N kernels of 64 ns queued on a non-blocking stream
//                  of its own, synchronized once at the end (launches far apart from the
//                  drain's cycles)
//   streams N      N times: a stream created, a 64 ns kernel on it, synchronized,
//                  destroyed (a server's stream per request)
//   copies N       N rounds of synchronous calls: cudaMemcpy HtoD from pinned memory
//                  (100000 bytes: 10000 ns), cudaMemset (50000 bytes: 5000 ns),
//                  cudaMemcpy DtoH into pinned and into pageable memory (10000 ns each)
//   peer           two GPUs (CUDA_SIM_DEVICES=2): peer access enabled each way (and
//                  once more: the documented error), a fill and an axpy of 2048 ns on
//                  each one's stream, then peer copies of 512 KiB (52428 ns): device 1
//                  into device 0 on device 0's stream (cudaMemcpyPeerAsync), device 0
//                  into device 1 (cudaMemcpyPeer), and 4096 bytes (409 ns) by
//                  cudaMemcpy through unified addressing, then cudaMemcpyPeer within
//                  device 1 (4096 bytes); the bytes read back
//   reset          twice: a fill (104857 ns), a scale (1024 ns) and an axpy (512 ns) on a
//                  stream, an event recorded after them, then cudaDeviceReset with no
//                  synchronize before it; the event then fails with
//                  cudaErrorContextIsDestroyed
//   reset nvtx     twice: an NVTX range "round" (a scale of 1024 ns and an axpy of 512 ns,
//                  synchronized), then a range "reset" (a scale of 1024 ns, then
//                  cudaDeviceReset inside the range)
//   copy2d         2D copies on a non-blocking stream's device: cudaMemcpy2D of 50 rows of
//                  1000 bytes from pinned memory into device rows of pitch 1024
//                  (cudaMallocPitch's; 50000 bytes: 5000 ns), cudaMemset2DAsync of 50 rows
//                  of 800 bytes on the stream (4000 ns), cudaMemcpy2DAsync of 50 rows of 800
//                  bytes device to device there (4000 ns), synchronized, then cudaMemcpy2D of 25
//                  of those rows back into pinned memory (20000 bytes: 2000 ns); the
//                  bytes read back
//   copy3d         copy2d's calls in 3D, 5 slices of 20 rows: cudaMemcpy3D HtoD of 1000-byte
//                  rows into pitch 1024 (100000 bytes: 10000 ns), cudaMemset3DAsync and
//                  cudaMemcpy3DAsync DtoD of 800-byte rows (80000 bytes: 8000 ns each),
//                  then cudaMemcpy3D DtoH of each slice's first 10 rows (40000 bytes: 4000 ns)
//   symbols        a __device__ float[1024] and a __constant__ int[256]: cudaMemcpyToSymbol
//                  of all 4096 bytes (409 ns), cudaMemcpyToSymbolAsync of 1000 bytes at
//                  offset 24 on a non-blocking stream (100 ns), synchronized,
//                  cudaMemcpyFromSymbol of 2048 bytes at offset 1024 (204 ns), and one
//                  past the end (cudaErrorInvalidValue, nothing copied); the bytes read back
//   hostfn         on a non-blocking stream: an axpy (2048 ns), cudaLaunchHostFunc of a
//                  host function sleeping 30 ms, a scale (1024 ns), cudaStreamAddCallback
//                  (checks its stream and status), synchronized
//   mallocasync    on a non-blocking stream: cudaMallocAsync of 1 MiB, a fill of it
//                  (104857 ns), an axpy (2048 ns), cudaMemcpyAsync of 4096 bytes into
//                  pinned memory (409 ns), cudaFreeAsync, synchronized; the bytes read back
//   late           after main's 2 scales of 64 ns and a device synchronize: an atexit
//                  handler registered before the first CUDA call and a global object's
//                  destructor do the same, then a destructor function fills the 256 bytes
//                  (25 ns), synchronizes and frees them: all run after gputrace's exit
//                  handler
//   keydtor        after a cudaMalloc, a pthread key made with a destructor; two threads,
//                  one after the other, each launch a scale of 64 ns, synchronize and set
//                  the key; its destructor launches 2 more and synchronizes as the thread
//                  ends
//   launchers N MS N threads, each with a non-blocking stream of its own, launch axpys of
//                  1024 ns and cudaMemsetAsync 64 bytes flat out, never synchronized;
//                  main returns after MS ms, while they launch on through the exit
//   end HOW N      N rounds of {cudaMemcpy of 4096 bytes to the device, an axpy of
//                  1024 ns, cudaDeviceSynchronize}, then the image ends by HOW: exec
//                  (of itself, mode "ended": returns 0), segv or abort
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include "check.h"

extern char **environ;

namespace sim {
template <typename T> __global__ void scale(T *p, T a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] *= a;
}
} // namespace sim

__global__ void axpy(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] += x[i];
}

__global__ void spin(int *p)
{
	if (p)
		*p = 1;
}

static const size_t MiB = 1 << 20;

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&t, NULL);
}

static int basic(void)
{
	cudaStream_t s1, s2;
	cudaEvent_t ev;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	float *d1, *d2, *hp, *h = (float *)calloc(1, MiB);
	int n = (int)(MiB / sizeof(float));

	CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CHECK(cudaStreamCreate(&s2));
	CHECK(cudaMalloc(&d1, MiB));
	CHECK(cudaMalloc(&d2, MiB));
	CHECK(cudaMallocHost(&hp, MiB / 4));
	nvtxRangePushA("upload");
	CHECK(cudaMemcpy(d1, h, MiB, cudaMemcpyHostToDevice));    // 104857 ns
	CHECK(cudaMemsetAsync(d2, 0, MiB, s1));                    // 104857 ns
	nvtxRangePop();
	nvtxRangePushA("compute");
	for (int i = 0; i < 3; i++)
		sim::scale<float><<<100, 256, 0, s1>>>(d1, 2.0f, n); // 25600 ns
	axpy<<<dim3(8, 4, 2), dim3(16, 8, 1), 0, s2>>>(d1, d2, n); // 8192 ns
	CHECK(cudaMemcpyAsync(hp, d1, MiB / 4, cudaMemcpyDeviceToHost, s1)); // 26214 ns
	CHECK(cudaMemcpyAsync(d2, d1, MiB / 2, cudaMemcpyDeviceToDevice, s2)); // 52428 ns
	CHECK(cudaStreamSynchronize(s1));
	nvtxRangePop();
	nvtxRangePushA("graph");
	CHECK(cudaStreamBeginCapture(s2, cudaStreamCaptureModeGlobal));
	sim::scale<float><<<10, 100, 0, s2>>>(d1, 0.5f, n);      // 1000 ns
	CHECK(cudaMemsetAsync(d1, 1, 4096, s2));                   // 409 ns
	CHECK(cudaStreamEndCapture(s2, &graph));
	CHECK(cudaGraphInstantiate(&exec, graph, 0));
	CHECK(cudaGraphLaunch(exec, s2));
	CHECK(cudaGraphLaunch(exec, s2));
	CHECK(cudaEventCreate(&ev));
	CHECK(cudaEventRecord(ev, s2));
	CHECK(cudaEventSynchronize(ev));
	nvtxRangePop();
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaGraphExecDestroy(exec));
	CHECK(cudaGraphDestroy(graph));
	CHECK(cudaEventDestroy(ev));
	CHECK(cudaFreeHost(hp));
	CHECK(cudaFree(d1));
	CHECK(cudaFree(d2));
	CHECK(cudaStreamDestroy(s1));
	CHECK(cudaStreamDestroy(s2));
	free(h);
	printf("sim_app basic: ok\n");
	return 0;
}

static float *three_kernels(void)
{
	float *d;

	CHECK(cudaMalloc(&d, MiB));
	for (int i = 0; i < 3; i++)
		sim::scale<float><<<100, 256>>>(d, 2.0f, 1000);     // 25600 ns
	CHECK(cudaDeviceSynchronize());
	return d;
}

static int signal_mode(const char *which)
{
	three_kernels();
	spin<<<200000, 1000>>>(NULL); // 200 ms: still running at the signal
	printf("ready\n");
	fflush(stdout);
	raise(strcmp(which, "INT") ? SIGTERM : SIGINT);
	sleep_ms(5000);
	printf("signal did not end the process\n");
	return 1;
}

static int fork_mode(bool idle)
{
	void *p = NULL;
	int status;

	three_kernels();
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0 && idle) {
		printf("child: no CUDA\n");
		exit(0);
	}
	if (pid == 0) {
		// CUDA does not survive fork(): the child's calls fail
		printf("child: cudaMalloc -> %s\n", cudaGetErrorName(cudaMalloc(&p, 64)));
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	three_kernels();
	printf("parent: child exited %d\n", WEXITSTATUS(status));
	return 0;
}

static int exec_mode(const char *self)
{
	char *child_env[256];
	int n = 0, status;

	three_kernels();
	// the child gets everything but LD_PRELOAD
	for (char **e = environ; *e && n < 255; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11))
			child_env[n++] = *e;
	child_env[n] = NULL;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		char *argv[] = { (char *)self, (char *)"child", NULL };
		execve("/proc/self/exe", argv, child_env);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	printf("parent: child exited %d\n", WEXITSTATUS(status));
	return 0;
}

static int child_mode(void)
{
	nvtxRangePushA("child range");
	three_kernels();
	nvtxRangePop();
	printf("child: ok, preload=%s\n", getenv("LD_PRELOAD") ? "yes" : "no");
	return 0;
}

static int capture_mode(void)
{
	cudaStream_t busy, cap;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	float *d;
	cudaError_t e;

	CHECK(cudaStreamCreateWithFlags(&busy, cudaStreamNonBlocking));
	CHECK(cudaStreamCreate(&cap));
	CHECK(cudaMalloc(&d, MiB));
	// 100 ms of work still running when the capture begins
	spin<<<100000, 1000, 0, busy>>>(NULL);
	CHECK(cudaStreamBeginCapture(cap, cudaStreamCaptureModeGlobal));
	sim::scale<float><<<10, 100, 0, cap>>>(d, 2.0f, 1000);
	sleep_ms(150); // a tracer's own thread runs meanwhile
	sim::scale<float><<<20, 100, 0, cap>>>(d, 2.0f, 1000);
	e = cudaStreamEndCapture(cap, &graph);
	if (e != cudaSuccess) {
		printf("capture: cudaStreamEndCapture -> %s\n", cudaGetErrorName(e));
		return 4;
	}
	CHECK(cudaGraphInstantiate(&exec, graph, 0));
	CHECK(cudaGraphLaunch(exec, cap));
	CHECK(cudaDeviceSynchronize());
	printf("capture: ok\n");
	return 0;
}

__attribute__((noinline)) void sim_inner(float *d)
{
	sim::scale<float><<<4, 64>>>(d, 2.0f, 256);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void sim_outer(float *d)
{
	sim_inner(d);
	__asm__ volatile("" ::: "memory");
}

static int stacks_mode(void)
{
	float *d;

	CHECK(cudaMalloc(&d, MiB));
	for (int i = 0; i < 2; i++)
		sim_outer(d);
	CHECK(cudaDeviceSynchronize());
	printf("stacks: ok\n");
	return 0;
}

/* A library next to this program. */
static void *open_beside(const char *self, const char *name)
{
	char lib[4096];

	snprintf(lib, sizeof(lib), "%s", self);
	char *slash = strrchr(lib, '/');
	snprintf(slash ? slash + 1 : lib, sizeof(lib) - (slash ? (size_t)(slash + 1 - lib) : 0),
		 "%s", name);
	return dlopen(lib, RTLD_NOW | RTLD_LOCAL);
}

static int reload_mode(const char *self, int n)
{
	void *h = open_beside(self, "libreload.so");
	int (*run)(int) = h ? (int (*)(int))dlsym(h, "reload_run") : NULL;

	if (!run) {
		printf("reload: %s\n", dlerror());
		return 5;
	}
	int e = run(n);
	dlclose(h); // its module is unloaded
	printf("reload: %d kernels, %s\n", n, cudaGetErrorName((cudaError_t)e));
	return 0;
}

static int runtimes_mode(const char *self)
{
	char report[256];
	int v = 0;

	CHECK(cudaRuntimeGetVersion(&v));
	three_kernels();
	void *h = open_beside(self, "librt12.so");
	int (*rt12)(char *, size_t) = h ? (int (*)(char *, size_t))dlsym(h, "rt12_report") : NULL;
	if (!rt12) {
		printf("runtimes: %s\n", dlerror());
		return 5;
	}
	int bad = rt12(report, sizeof(report));
	printf("runtime 13: version %d\nruntime 12: %s\n", v, report);
	return bad;
}

static int clock_mode(int n, int gap_ms, int burst)
{
	float *d;

	CHECK(cudaMalloc(&d, MiB));
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < burst; k++) // launched microseconds apart, run back to back
			sim::scale<float><<<100, 200>>>(d, 1.0f, 1000); // 20000 ns
		CHECK(cudaStreamSynchronize(0));
		sleep_ms(gap_ms);
	}
	printf("clock: %d kernels\n", n * burst);
	return 0;
}

// Thread t launches <<<t + 1, 64 * (t + 1)>>>: (t + 1)^2 * 64 ns each, so every kernel
// says which thread launched it.
static void *launcher(void *arg)
{
	int t = (int)(long)arg;
	cudaStream_t s;
	float *d;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d, MiB));
	for (int i = 0; i < 5; i++)
		sim::scale<float><<<t + 1, 64 * (t + 1), 0, s>>>(d, 1.0f, 1000);
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaFree(d));
	CHECK(cudaStreamDestroy(s));
	return NULL;
}

static pthread_barrier_t overlap_barrier;

static void *nvtx_worker(void *arg)
{
	long blocks = (long)arg;
	float *d;

	CHECK(cudaMalloc(&d, MiB));
	nvtxRangePushA(blocks ? "worker" : "overlap");
	sim::scale<float><<<blocks ? blocks : 8, 128>>>(d, 1.0f, 1000); // blocks * 128 ns
	if (!blocks)
		pthread_barrier_wait(&overlap_barrier); // both launched before either pops
	CHECK(cudaStreamSynchronize(0));
	nvtxRangePop();
	CHECK(cudaFree(d));
	return NULL;
}

static void *nvtx_leaver(void *arg)
{
	float *d = (float *)arg;

	nvtxRangePushA("leaver");
	sim::scale<float><<<4, 256>>>(d, 1.0f, 1000); // 1024 ns
	CHECK(cudaStreamSynchronize(0));
	return NULL; // its range never popped
}

static int nvtx_leave_mode(void)
{
	pthread_t th;
	float *d;

	CHECK(cudaMalloc(&d, MiB));
	pthread_create(&th, NULL, nvtx_leaver, d);
	pthread_join(th, NULL);
	for (int i = 0; i < 3; i++) {
		nvtxRangePushA("after");
		axpy<<<2, 256>>>(d, d, 1000); // 512 ns
		nvtxRangePop();
	}
	CHECK(cudaDeviceSynchronize());
	printf("nvtx: leave\n");
	return 0;
}

static int nvtx_mode(bool overlap)
{
	pthread_t th[2];
	float *d;

	CHECK(cudaMalloc(&d, MiB));
	if (overlap) {
		pthread_barrier_init(&overlap_barrier, NULL, 2);
		for (long t = 0; t < 2; t++)
			pthread_create(&th[t], NULL, nvtx_worker, (void *)0);
		for (int t = 0; t < 2; t++)
			pthread_join(th[t], NULL);
		printf("nvtx: overlap\n");
		return 0;
	}
	for (int i = 0; i < 3; i++) {
		nvtxRangePushA("step");
		nvtxRangePushA("fwd");
		for (int k = 0; k < 2; k++)
			sim::scale<float><<<4, 64>>>(d, 1.0f, 1000); // 256 ns
		nvtxRangePop();
		nvtxRangePushA("bwd");
		axpy<<<2, 32>>>(d, d, 1000); // 64 ns
		nvtxRangePop();
		nvtxRangePop(); // its kernels may still run
	}
	nvtxRangePushA("idle");
	sleep_ms(1);
	nvtxRangePop();
	for (long blocks = 8; blocks <= 16; blocks += 8) {
		pthread_create(&th[0], NULL, nvtx_worker, (void *)blocks);
		pthread_join(th[0], NULL);
	}
	CHECK(cudaDeviceSynchronize());
	printf("nvtx: 3 steps\n");
	return 0;
}

struct shared_step {
	cudaStream_t s;
	float *d;
	char name[16];
};

static void *shared_launch(void *arg);

static void *shared_worker(void *arg)
{
	struct shared_step *st = (struct shared_step *)arg;

	pthread_setname_np(pthread_self(), st->name); /* its row's name */
	return shared_launch(arg);
}

static void *shared_launch(void *arg)
{
	struct shared_step *st = (struct shared_step *)arg;

	char kind = st->name[0];

	if (kind == 'M')
		nvtxRangePushA("main");
	if (kind != 'w')
		nvtxRangePushA(st->name);
	sim::scale<float><<<8, 128, 0, st->s>>>(st->d, 1.0f, 1000); // 1024 ns
	if (kind != 'w')
		nvtxRangePop();
	if (kind == 'M')
		nvtxRangePop();
	return NULL;
}

static int shared_mode(const char *seq)
{
	struct shared_step st;
	pthread_t th;

	CHECK(cudaMalloc(&st.d, MiB));
	CHECK(cudaStreamCreate(&st.s));
	for (int i = 0; seq[i]; i++) {
		snprintf(st.name, sizeof(st.name), "%c%d", seq[i], i);
		if (seq[i] == 'W' || seq[i] == 'w') {
			pthread_create(&th, NULL, shared_worker, &st);
			pthread_join(th, NULL);
		} else {
			shared_launch(&st);
		}
	}
	CHECK(cudaStreamSynchronize(st.s));
	printf("shared: %s\n", seq);
	return 0;
}

struct turns {
	cudaStream_t s;
	float *d;
	const char *seq;
	int next; /* the letter of SEQ whose turn it is */
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

struct turns_thread {
	struct turns *t;
	char me;
};

static void *turns_thread(void *arg)
{
	struct turns_thread *th = (struct turns_thread *)arg;
	struct turns *t = th->t;

	nvtxRangePushA(th->me == 'A' ? "A" : "B");
	if (th->me == 'B')
		nvtxRangePushA("b");
	for (int i = 0; t->seq[i]; i++) {
		if (t->seq[i] != th->me)
			continue;
		pthread_mutex_lock(&t->mu);
		while (t->next != i)
			pthread_cond_wait(&t->cv, &t->mu);
		pthread_mutex_unlock(&t->mu);
		sim::scale<float><<<8, 128, 0, t->s>>>(t->d, 1.0f, 1000); // 1024 ns
		pthread_mutex_lock(&t->mu);
		t->next++;
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&t->mu);
	}
	if (th->me == 'B')
		nvtxRangePop();
	nvtxRangePop();
	return NULL;
}

static int turns_mode(const char *seq)
{
	struct turns t;
	struct turns_thread a = { &t, 'A' }, b = { &t, 'B' };
	pthread_t ta, tb;

	t.seq = seq;
	t.next = 0;
	pthread_mutex_init(&t.mu, NULL);
	pthread_cond_init(&t.cv, NULL);
	CHECK(cudaMalloc(&t.d, MiB));
	CHECK(cudaStreamCreate(&t.s));
	pthread_create(&ta, NULL, turns_thread, &a);
	pthread_create(&tb, NULL, turns_thread, &b);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	CHECK(cudaStreamSynchronize(t.s));
	printf("turns: %s\n", seq);
	return 0;
}

// multi_stream's "graph" phase (scripts/gpu-check): a stream capture inside an NVTX
// range, its first kernel launched into the capture; then a range of plain launches.
static int nvtx_capture_mode(void)
{
	cudaStream_t s;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	float *d;

	CHECK(cudaMalloc(&d, MiB));
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	nvtxRangePushA("graph");
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	sim::scale<float><<<4, 64, 0, s>>>(d, 1.0f, 1000);
	axpy<<<2, 32, 0, s>>>(d, d, 1000);
	CHECK(cudaMemsetAsync(d, 0, 4096, s));
	CHECK(cudaStreamEndCapture(s, &graph));
	CHECK(cudaGraphInstantiate(&exec, graph, 0));
	CHECK(cudaGraphLaunch(exec, s));
	sim::scale<float><<<4, 64, 0, s>>>(d, 1.0f, 1000); // after the capture, still inside
	CHECK(cudaStreamSynchronize(s));
	nvtxRangePop();
	nvtxRangePushA("after");
	sim::scale<float><<<4, 64, 0, s>>>(d, 1.0f, 1000); // 256 ns
	CHECK(cudaStreamSynchronize(s));
	nvtxRangePop();
	CHECK(cudaGraphExecDestroy(exec));
	CHECK(cudaGraphDestroy(graph));
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFree(d));
	printf("nvtx: capture\n");
	return 0;
}

static int threads_mode(void)
{
	pthread_t th[4];

	for (long t = 0; t < 4; t++)
		if (pthread_create(&th[t], NULL, launcher, (void *)t))
			return 1;
	for (int t = 0; t < 4; t++)
		pthread_join(th[t], NULL);
	printf("threads: 20 kernels\n");
	return 0;
}

// Named, not inlined: the watchdog's report must show who waits.
__attribute__((noinline)) static void wait_for_stream(cudaStream_t s)
{
	CHECK(cudaStreamSynchronize(s));
	__asm__ volatile("" ::: "memory"); // no tail call: this frame stays
}

static int wait_mode(int ms)
{
	cudaStream_t s;

	CHECK(cudaStreamCreate(&s));
	spin<<<ms * 1000, 1000, 0, s>>>(NULL); // ms milliseconds
	printf("waiting\n");
	fflush(stdout);
	wait_for_stream(s);
	CHECK(cudaStreamDestroy(s));
	printf("done\n");
	return 0;
}

// A thread blocked in cudaDeviceSynchronize (cudaDeviceReset, or a cudaMemcpy to
// the host; the driver's cuCtxSynchronize or cuMemcpyDtoH, called directly) behind
// a 300 ms kernel is cancelled 100 ms in; main then launches 10 kernels and
// synchronizes.
static void *cancel_waiter(void *call)
{
	int *d = NULL, h;
	bool drv = !strncmp((const char *)call, "drv-", 4);
	void *libcuda = drv ? dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) : NULL;

	if (strstr((const char *)call, "memcpy"))
		cudaMalloc(&d, sizeof(h));
	spin<<<300000, 1000>>>(NULL); // 300 ms
	if (drv && d)
		((int (*)(void *, unsigned long long, size_t))dlsym(libcuda, "cuMemcpyDtoH_v2"))(
			&h, (unsigned long long)d, sizeof(h));
	else if (drv)
		((int (*)(void))dlsym(libcuda, "cuCtxSynchronize"))();
	else if (!strcmp((const char *)call, "reset"))
		cudaDeviceReset();
	else if (d)
		cudaMemcpy(&h, d, sizeof(h), cudaMemcpyDeviceToHost);
	else
		cudaDeviceSynchronize();
	return NULL;
}

static int cancel_mode(const char *call)
{
	pthread_t t;
	void *ret;

	CHECK(cudaFree(0));
	if (pthread_create(&t, NULL, cancel_waiter, (void *)call))
		return 1;
	sleep_ms(100);
	pthread_cancel(t);
	pthread_join(t, &ret);
	printf("waiter %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "returned");
	CHECK(cudaDeviceSynchronize());
	for (int i = 0; i < 10; i++)
		spin<<<1, 64>>>(NULL);
	CHECK(cudaDeviceSynchronize());
	return 0;
}

// Kernels of 2^30 blocks of 1024 threads: 18 minutes on the simulator,
// longer than any test runs (it is killed): work that never finishes.
static int hang_mode(bool busy)
{
	cudaStream_t a, b, c;
	float *d;

	CHECK(cudaStreamCreate(&a));
	CHECK(cudaStreamCreate(&b));
	CHECK(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d, 4096));
	axpy<<<1, 256, 0, a>>>(d, d, 256);
	axpy<<<1, 256, 0, a>>>(d, d, 256);
	sim::scale<float><<<1, 128, 0, b>>>(d, 2.0f, 128);
	CHECK(cudaDeviceSynchronize());
	axpy<<<2, 256, 0, a>>>(d, d, 512); // finished, but nobody waits for it
	spin<<<1u << 30, 1024, 0, b>>>(NULL);
	axpy<<<1, 64, 0, b>>>(d, d, 64); // queued behind the spin
	sim::scale<float><<<1u << 30, 1024, 0, c>>>(d, 3.0f, 0);
	printf("waiting\n");
	fflush(stdout);
	while (busy)
		sleep_ms(100);
	wait_for_stream(b);
	return 1; // not reached
}

// The async copies and fills that are not the 1D ones, stuck behind a spin.
static int hang_copies_mode(void)
{
	cudaStream_t b;
	char *d, *d1, *h;
	size_t pitch;

	CHECK(cudaSetDevice(1));
	CHECK(cudaMalloc(&d1, 4096));
	CHECK(cudaSetDevice(0));
	CHECK(cudaStreamCreate(&b));
	CHECK(cudaMallocPitch(&d, &pitch, 100, 10));
	CHECK(cudaMallocHost(&h, 1000));
	spin<<<1u << 30, 1024, 0, b>>>(NULL);
	CHECK(cudaMemcpy2DAsync(d, pitch, h, 100, 100, 10, cudaMemcpyHostToDevice, b));
	CHECK(cudaMemset2DAsync(d, pitch, 0, 100, 10, b));
	CHECK(cudaMemcpyPeerAsync(d1, 1, d, 0, 1000, b));
	printf("waiting\n");
	fflush(stdout);
	wait_for_stream(b);
	return 1; // not reached
}

// The process's first CUDA call allocates pinned memory: CUPTI starts inside it (at
// cuInit), and the driver calls the runtime makes after that are its own.
static int cold_mode(void)
{
	float *h;

	CHECK(cudaMallocHost(&h, MiB));
	sim::scale<float><<<1, 64>>>(h, 1.0f, 0);
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaFreeHost(h));
	printf("cold: ok\n");
	return 0;
}

struct queue_job {
	int n;
	float *d;
};

static void *queue_launcher(void *arg)
{
	struct queue_job *job = (struct queue_job *)arg;
	cudaStream_t s;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (int i = 0; i < job->n; i++)
		sim::scale<float><<<1, 64, 0, s>>>(job->d, 1.0f, 64);
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaStreamDestroy(s));
	return NULL;
}

static int queue_mode(int n, int threads)
{
	pthread_t th[64];
	struct queue_job job = { n, NULL };

	if (threads < 1 || threads > 64)
		return 2;
	CHECK(cudaMalloc(&job.d, 64 * sizeof(float)));
	for (int t = 0; t < threads; t++)
		if (pthread_create(&th[t], NULL, queue_launcher, &job))
			return 1;
	for (int t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	CHECK(cudaFree(job.d));
	printf("queue: %d kernels\n", n * threads);
	return 0;
}

static int streams_mode(int n)
{
	float *d;

	CHECK(cudaMalloc(&d, 64 * sizeof(float)));
	for (int i = 0; i < n; i++) {
		cudaStream_t s;

		CHECK(cudaStreamCreate(&s));
		sim::scale<float><<<1, 64, 0, s>>>(d, 1.0f, 64);
		CHECK(cudaStreamSynchronize(s));
		CHECK(cudaStreamDestroy(s));
	}
	printf("streams: %d\n", n);
	return 0;
}

static int copies_mode(int n)
{
	float *d, *pinned, *pageable = (float *)calloc(1, 100000);

	CHECK(cudaMalloc(&d, 100000));
	CHECK(cudaMallocHost(&pinned, 100000));
	for (int i = 0; i < n; i++) {
		CHECK(cudaMemcpy(d, pinned, 100000, cudaMemcpyHostToDevice));   // 10000 ns
		CHECK(cudaMemset(d, 0, 50000));                                 // 5000 ns
		CHECK(cudaMemcpy(pinned, d, 100000, cudaMemcpyDeviceToHost));   // 10000 ns
		CHECK(cudaMemcpy(pageable, d, 100000, cudaMemcpyDeviceToHost)); // 10000 ns
	}
	printf("copies: %d rounds\n", n);
	free(pageable);
	return 0;
}

static int peer_mode(void)
{
	const size_t half = MiB / 2;
	unsigned char *buf[2], *host;
	cudaStream_t s[2];
	int n = 0, can = 0;

	CHECK(cudaGetDeviceCount(&n));
	CHECK(cudaDeviceCanAccessPeer(&can, 0, 1));
	if (n < 2 || !can) {
		printf("peer: %d devices, peer access %d\n", n, can);
		return 2;
	}
	CHECK(cudaMallocHost(&host, MiB));
	for (int d = 0; d < 2; d++) {
		CHECK(cudaSetDevice(d));
		CHECK(cudaDeviceEnablePeerAccess(1 - d, 0));
		CHECK(cudaMalloc(&buf[d], MiB));
		CHECK(cudaStreamCreateWithFlags(&s[d], cudaStreamNonBlocking));
		CHECK(cudaMemsetAsync(buf[d], 0x10 + d, MiB, s[d]));                 // 104857 ns
		axpy<<<8, 256, 0, s[d]>>>((float *)buf[d], (float *)buf[d], 2048); // 2048 ns
	}
	if (cudaDeviceEnablePeerAccess(0, 0) != cudaErrorPeerAccessAlreadyEnabled ||
	    cudaGetLastError() != cudaErrorPeerAccessAlreadyEnabled) {
		printf("peer: enabling twice did not fail as documented\n");
		return 1;
	}
	CHECK(cudaStreamSynchronize(s[1]));
	CHECK(cudaSetDevice(0));
	CHECK(cudaMemcpyPeerAsync(buf[0] + half, 0, buf[1], 1, half, s[0])); // 52428 ns
	CHECK(cudaStreamSynchronize(s[0]));
	CHECK(cudaSetDevice(1));
	CHECK(cudaMemcpyPeer(buf[1] + half, 1, buf[0], 0, half));            // 52428 ns
	CHECK(cudaMemcpy(buf[1], buf[0] + half, 4096, cudaMemcpyDefault));   // 409 ns
	// within one device: a copy there, not between two
	CHECK(cudaMemcpyPeer(buf[1] + 8192, 1, buf[1] + 4096, 1, 4096));     // 409 ns
	CHECK(cudaMemcpy(host, buf[0], MiB, cudaMemcpyDeviceToHost));
	bool ok = host[0] == 0x10 && host[half - 1] == 0x10 && host[half] == 0x11 &&
		  host[MiB - 1] == 0x11;
	CHECK(cudaMemcpy(host, buf[1], MiB, cudaMemcpyDeviceToHost));
	ok = ok && host[0] == 0x11 && host[4096] == 0x11 && host[half] == 0x10 &&
	     host[MiB - 1] == 0x10;
	for (int d = 0; d < 2; d++) {
		CHECK(cudaSetDevice(d));
		CHECK(cudaDeviceDisablePeerAccess(1 - d));
		CHECK(cudaStreamDestroy(s[d]));
		CHECK(cudaFree(buf[d]));
	}
	CHECK(cudaFreeHost(host));
	printf("peer: %s\n", ok ? "ok" : "wrong bytes");
	return ok ? 0 : 1;
}

static int reset_nvtx_mode(void)
{
	for (int round = 0; round < 2; round++) {
		float *d;

		nvtxRangePushA("round");
		CHECK(cudaMalloc(&d, MiB));
		sim::scale<float><<<4, 256>>>(d, 2.0f, 1024); // 1024 ns
		axpy<<<2, 256>>>(d, d, 512);                  // 512 ns
		CHECK(cudaDeviceSynchronize());
		nvtxRangePop();
		nvtxRangePushA("reset");
		sim::scale<float><<<4, 256>>>(d, 2.0f, 1024);
		CHECK(cudaDeviceReset());
		nvtxRangePop();
	}
	printf("reset nvtx: ok\n");
	return 0;
}

static int reset_mode(void)
{
	for (int round = 0; round < 2; round++) {
		cudaStream_t s;
		cudaEvent_t ev;
		float *d;

		CHECK(cudaMalloc(&d, MiB));
		CHECK(cudaStreamCreate(&s));
		CHECK(cudaEventCreate(&ev));
		CHECK(cudaMemsetAsync(d, 0, MiB, s));                // 104857 ns
		sim::scale<float><<<4, 256, 0, s>>>(d, 2.0f, 1024); // 1024 ns
		axpy<<<2, 256, 0, s>>>(d, d, 512);                  // 512 ns
		CHECK(cudaEventRecord(ev, s));
		CHECK(cudaDeviceReset());
		if (cudaEventQuery(ev) != cudaErrorContextIsDestroyed ||
		    cudaEventDestroy(ev) != cudaErrorContextIsDestroyed) {
			printf("reset: the event outlived its context\n");
			return 1;
		}
		(void)cudaGetLastError();
	}
	printf("reset: ok\n");
	return 0;
}

static int copy2d_mode(void)
{
	const size_t rows = 50;
	size_t pitch = 0;
	unsigned char *host, *back, *d, *d2;
	cudaStream_t s;
	bool ok = true;

	CHECK(cudaMallocHost(&host, 1000 * rows));
	CHECK(cudaMallocHost(&back, 800 * rows));
	CHECK(cudaMallocPitch(&d, &pitch, 1000, rows));
	if (pitch != 1024)
		printf("copy2d: cudaMallocPitch gave a pitch of %zu, not 1024\n", pitch);
	CHECK(cudaMalloc(&d2, 800 * rows));
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (size_t i = 0; i < 1000 * rows; i++)
		host[i] = (unsigned char)(i % 251);
	CHECK(cudaMemcpy2D(d, pitch, host, 1000, 1000, rows, cudaMemcpyHostToDevice)); // 5000 ns
	CHECK(cudaMemset2DAsync(d2, 800, 0xff, 800, rows, s)); // 4000 ns, overwritten next
	CHECK(cudaMemcpy2DAsync(d2, 800, d, pitch, 800, rows, cudaMemcpyDeviceToDevice,
				s)); // 4000 ns
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaMemcpy2D(back, 800, d2, 800, 800, rows / 2, cudaMemcpyDeviceToHost)); // 2000 ns
	for (size_t y = 0; y < rows / 2; y++)
		for (size_t x = 0; x < 800; x++)
			ok = ok && back[y * 800 + x] == host[y * 1000 + x];
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFree(d));
	CHECK(cudaFree(d2));
	CHECK(cudaFreeHost(host));
	CHECK(cudaFreeHost(back));
	printf("copy2d: %s\n", ok ? "ok" : "wrong bytes");
	return ok ? 0 : 1;
}

// copy2d's calls in 3D: volumes of 5 slices of 20 rows, each slice its rows apart
static int copy3d_mode(void)
{
	const size_t rows = 20, slices = 5;
	size_t pitch = 0;
	unsigned char *host, *back, *d, *d2;
	cudaStream_t s;
	bool ok = true;

	CHECK(cudaMallocHost(&host, 1000 * rows * slices));
	CHECK(cudaMallocHost(&back, 800 * rows / 2 * slices));
	CHECK(cudaMallocPitch(&d, &pitch, 1000, rows * slices));
	CHECK(cudaMalloc(&d2, 800 * rows * slices));
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (size_t i = 0; i < 1000 * rows * slices; i++)
		host[i] = (unsigned char)(i % 251);
	cudaMemcpy3DParms up = {};
	up.srcPtr = make_cudaPitchedPtr(host, 1000, 1000, rows);
	up.dstPtr = make_cudaPitchedPtr(d, pitch, 1000, rows);
	up.extent = make_cudaExtent(1000, rows, slices);
	up.kind = cudaMemcpyHostToDevice;
	CHECK(cudaMemcpy3D(&up)); // 10000 ns
	CHECK(cudaMemset3DAsync(make_cudaPitchedPtr(d2, 800, 800, rows), 0xff,
				make_cudaExtent(800, rows, slices), s)); // 8000 ns, overwritten next
	cudaMemcpy3DParms across = {};
	across.srcPtr = make_cudaPitchedPtr(d, pitch, 1000, rows);
	across.dstPtr = make_cudaPitchedPtr(d2, 800, 800, rows);
	across.extent = make_cudaExtent(800, rows, slices);
	across.kind = cudaMemcpyDeviceToDevice;
	CHECK(cudaMemcpy3DAsync(&across, s)); // 8000 ns
	CHECK(cudaStreamSynchronize(s));
	cudaMemcpy3DParms down = {}; // the first half of each slice's rows
	down.srcPtr = make_cudaPitchedPtr(d2, 800, 800, rows);
	down.dstPtr = make_cudaPitchedPtr(back, 800, 800, rows / 2);
	down.extent = make_cudaExtent(800, rows / 2, slices);
	down.kind = cudaMemcpyDeviceToHost;
	CHECK(cudaMemcpy3D(&down)); // 4000 ns
	for (size_t z = 0; z < slices; z++)
		for (size_t y = 0; y < rows / 2; y++)
			for (size_t x = 0; x < 800; x++)
				ok = ok && back[(z * rows / 2 + y) * 800 + x] ==
						   host[(z * rows + y) * 1000 + x];
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFree(d));
	CHECK(cudaFree(d2));
	CHECK(cudaFreeHost(host));
	CHECK(cudaFreeHost(back));
	printf("copy3d: %s\n", ok ? "ok" : "wrong bytes");
	return ok ? 0 : 1;
}

__device__ float coeffs[1024];
__constant__ int lut[256];

__global__ void use_symbols(float *out)
{
	out[threadIdx.x] = coeffs[threadIdx.x] * (float)lut[threadIdx.x];
}

static int symbols_mode(void)
{
	unsigned char *host, back[2048];
	cudaStream_t s;
	bool ok = true;

	CHECK(cudaMallocHost(&host, 4096));
	for (int i = 0; i < 4096; i++)
		host[i] = (unsigned char)(i % 253);
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMemcpyToSymbol(coeffs, host, 4096));                                 // 409 ns
	CHECK(cudaMemcpyToSymbolAsync(lut, host, 1000, 24, cudaMemcpyHostToDevice, s)); // 100 ns
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaMemcpyFromSymbol(back, coeffs, 2048, 1024));                           // 204 ns
	ok = !memcmp(back, host + 1024, 2048);
	if (cudaMemcpyToSymbol(lut, host, 8, 1020) != cudaErrorInvalidValue ||
	    cudaGetLastError() != cudaErrorInvalidValue) {
		printf("symbols: a copy past the end did not fail as documented\n");
		return 1;
	}
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFreeHost(host));
	printf("symbols: %s\n", ok ? "ok" : "wrong bytes");
	return ok ? 0 : 1;
}

static void CUDART_CB sleep_30ms(void *)
{
	struct timespec t = { 0, 30000000 };

	nanosleep(&t, NULL);
}

static void CUDART_CB check_callback(cudaStream_t s, cudaError_t status, void *arg)
{
	*(bool *)arg = status == cudaSuccess && s != NULL;
}

static int hostfn_mode(void)
{
	cudaStream_t s;
	float *d;
	bool called = false;

	CHECK(cudaMalloc(&d, 8 * 256 * sizeof(float)));
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	axpy<<<8, 256, 0, s>>>(d, d, 2048);                  // 2048 ns
	CHECK(cudaLaunchHostFunc(s, sleep_30ms, NULL));      // 30 ms
	sim::scale<float><<<4, 256, 0, s>>>(d, 2.0f, 1024); // 1024 ns
	CHECK(cudaStreamAddCallback(s, check_callback, &called, 0));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFree(d));
	printf("hostfn: %s\n", called ? "ok" : "callback not called as documented");
	return called ? 0 : 1;
}

static int mallocasync_mode(void)
{
	cudaStream_t s;
	unsigned char *d, *host;
	bool ok = true;

	CHECK(cudaMallocHost(&host, 4096));
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMallocAsync(&d, MiB, s));
	CHECK(cudaMemsetAsync(d, 0x5a, MiB, s));                                  // 104857 ns
	axpy<<<8, 256, 0, s>>>((float *)d, (float *)d + 4096, 2048);              // 2048 ns
	CHECK(cudaMemcpyAsync(host, d, 4096, cudaMemcpyDeviceToHost, s));         // 409 ns
	CHECK(cudaFreeAsync(d, s));
	CHECK(cudaStreamSynchronize(s));
	for (int i = 0; i < 4096; i++)
		ok = ok && host[i] == 0x5a;
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFreeHost(host));
	printf("mallocasync: %s\n", ok ? "ok" : "wrong bytes");
	return ok ? 0 : 1;
}

// The runtime calls around a graph and a stream that launch nothing: each traced
// once, with CUPTI or without it
static int graphcalls_mode(void)
{
	cudaStream_t s;
	cudaGraph_t graph;
	cudaGraphExec_t exec[2];
	cudaGraphNode_t nodes[4];
	size_t count = 4;
	unsigned long long id = 0;
	float *d;

	CHECK(cudaMalloc(&d, 4096));
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaStreamGetId(s, &id));
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
	sim::scale<float><<<1, 64, 0, s>>>(d, 2.0f, 1024); // 64 ns
	CHECK(cudaStreamEndCapture(s, &graph));
	CHECK(cudaGraphGetNodes(graph, nodes, &count));
	CHECK(cudaGraphInstantiate(&exec[0], graph, 0));
	CHECK(cudaGraphInstantiateWithFlags(&exec[1], graph, 0));
	CHECK(cudaGraphLaunch(exec[1], s));
	CHECK(cudaStreamSynchronize(s));
	for (int i = 0; i < 2; i++)
		CHECK(cudaGraphExecDestroy(exec[i]));
	CHECK(cudaGraphDestroy(graph));
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFree(d));
	printf("graphcalls: %zu node, stream id %s\n", count, id ? "set" : "0");
	return 0;
}

static float *late_buf; // set by late mode: its exit handlers and destructors launch

static void late_work(void)
{
	for (int i = 0; i < 2; i++)
		sim::scale<float><<<1, 64>>>(late_buf, 1.0f, 64);
	CHECK(cudaDeviceSynchronize());
}

static void late_handler(void)
{
	if (late_buf)
		late_work();
}

static struct late_global {
	~late_global()
	{
		if (late_buf)
			late_work();
	}
} late_object;

// the last of them (the loader's, after the exit handlers): a fill, as nvcc's exit
// handler has unregistered the program's kernels by then
__attribute__((destructor)) static void late_destructor(void)
{
	if (!late_buf)
		return;
	CHECK(cudaMemset(late_buf, 0, 64 * sizeof(float)));
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaFree(late_buf));
}

static int late_mode(void)
{
	atexit(late_handler); // before the first CUDA call, as a library's init would
	CHECK(cudaMalloc(&late_buf, 64 * sizeof(float)));
	late_work();
	printf("late: ok\n");
	return 0;
}

static pthread_key_t cache_key;

static void cache_free(void *p)
{
	for (int i = 0; i < 2; i++)
		sim::scale<float><<<1, 64>>>((float *)p, 1.0f, 64);
	CHECK(cudaDeviceSynchronize());
}

static void *cache_user(void *p)
{
	sim::scale<float><<<1, 64>>>((float *)p, 1.0f, 64);
	CHECK(cudaDeviceSynchronize());
	pthread_setspecific(cache_key, p);
	return NULL;
}

static int keydtor_mode(void)
{
	float *d;

	CHECK(cudaMalloc(&d, 64 * sizeof(float)));
	// made after the first CUDA call, so after gputrace's own key
	pthread_key_create(&cache_key, cache_free);
	for (int i = 0; i < 2; i++) {
		pthread_t t;

		pthread_create(&t, NULL, cache_user, d);
		pthread_join(t, NULL);
	}
	printf("keydtor: ok\n");
	return 0;
}

static void *flat_out(void *p)
{
	cudaStream_t s;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (;;) {
		axpy<<<4, 256, 0, s>>>((float *)p, (float *)p, 1024);
		cudaMemsetAsync(p, 0, 64, s);
	}
	return NULL;
}

static int launchers_mode(int n, int ms)
{
	float *d;

	CHECK(cudaMalloc(&d, 1024 * sizeof(float)));
	for (int i = 0; i < n; i++) {
		pthread_t t;

		pthread_create(&t, NULL, flat_out, d);
		pthread_detach(t);
	}
	usleep(ms * 1000);
	printf("launchers: ok\n");
	fflush(stdout);
	return 0;
}

static int end_mode(const char *self, const char *how, int n)
{
	float *d, h[1024] = { 0 };

	CHECK(cudaMalloc(&d, sizeof(h)));
	for (int i = 0; i < n; i++) {
		CHECK(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice)); // 409 ns
		axpy<<<4, 256>>>(d, d, 1024);                               // 1024 ns
		CHECK(cudaDeviceSynchronize());
	}
	printf("did %d\n", n);
	fflush(stdout);
	if (!strcmp(how, "exec"))
		execl(self, self, "ended", (char *)NULL);
	if (!strcmp(how, "segv"))
		*(volatile int *)0 = 1;
	if (!strcmp(how, "abort"))
		abort();
	printf("end %s did not end the image\n", how);
	return 1;
}

int main(int argc, char **argv)
{
	int count = 0;
	const char *mode = argc > 1 ? argv[1] : "basic";
	if (!strcmp(mode, "cold"))
		return cold_mode(); // before any other CUDA call
	if (!strcmp(mode, "late"))
		return late_mode(); // its handler goes in before any CUDA call
	if (!strcmp(mode, "getters")) {
		int dev = -1;
		for (int i = 0; i < 3; i++)
			CHECK(cudaGetDevice(&dev));
		printf("device %d\n", dev);
		return 0;
	}
	cudaError_t e = cudaGetDeviceCount(&count);

	if (e != cudaSuccess || count == 0) {
		printf("no CUDA device: %s\n", cudaGetErrorName(e));
		return 3;
	}
	if (!strcmp(mode, "basic"))
		return basic();
	if (!strcmp(mode, "signal"))
		return signal_mode(argc > 2 ? argv[2] : "TERM");
	if (!strcmp(mode, "fork"))
		return fork_mode(argc > 2 && !strcmp(argv[2], "idle"));
	if (!strcmp(mode, "exec"))
		return exec_mode(argv[0]);
	if (!strcmp(mode, "child"))
		return child_mode();
	if (!strcmp(mode, "capture"))
		return capture_mode();
	if (!strcmp(mode, "stacks"))
		return stacks_mode();
	if (!strcmp(mode, "runtimes"))
		return runtimes_mode(argv[0]);
	if (!strcmp(mode, "clock"))
		return clock_mode(argc > 2 ? atoi(argv[2]) : 30, argc > 3 ? atoi(argv[3]) : 40,
				  argc > 4 ? atoi(argv[4]) : 1);
	if (!strcmp(mode, "threads"))
		return threads_mode();
	if (!strcmp(mode, "nvtx") && argc > 3 && !strcmp(argv[2], "exit"))
		return nvtx_mode(false) ? 1 : atoi(argv[3]);
	if (!strcmp(mode, "nvtx") && argc > 2 && !strcmp(argv[2], "leave"))
		return nvtx_leave_mode();
	if (!strcmp(mode, "nvtx") && argc > 2 && !strcmp(argv[2], "capture"))
		return nvtx_capture_mode();
	if (!strcmp(mode, "nvtx"))
		return nvtx_mode(argc > 2 && !strcmp(argv[2], "overlap"));
	if (!strcmp(mode, "shared") && argc > 2)
		return shared_mode(argv[2]);
	if (!strcmp(mode, "turns") && argc > 2)
		return turns_mode(argv[2]);
	if (!strcmp(mode, "reload"))
		return reload_mode(argv[0], argc > 2 ? atoi(argv[2]) : 25000);
	if (!strcmp(mode, "hang") && argc > 2 && !strcmp(argv[2], "copies"))
		return hang_copies_mode();
	if (!strcmp(mode, "hang"))
		return hang_mode(argc > 2 && !strcmp(argv[2], "busy"));
	if (!strcmp(mode, "queue"))
		return queue_mode(argc > 2 ? atoi(argv[2]) : 6000, argc > 3 ? atoi(argv[3]) : 1);
	if (!strcmp(mode, "streams"))
		return streams_mode(argc > 2 ? atoi(argv[2]) : 10);
	if (!strcmp(mode, "copies"))
		return copies_mode(argc > 2 ? atoi(argv[2]) : 3);
	if (!strcmp(mode, "peer"))
		return peer_mode();
	if (!strcmp(mode, "reset") && argc > 2 && !strcmp(argv[2], "nvtx"))
		return reset_nvtx_mode();
	if (!strcmp(mode, "reset"))
		return reset_mode();
	if (!strcmp(mode, "copy2d"))
		return copy2d_mode();
	if (!strcmp(mode, "copy3d"))
		return copy3d_mode();
	if (!strcmp(mode, "symbols"))
		return symbols_mode();
	if (!strcmp(mode, "hostfn"))
		return hostfn_mode();
	if (!strcmp(mode, "graphcalls"))
		return graphcalls_mode();
	if (!strcmp(mode, "mallocasync"))
		return mallocasync_mode();
	if (!strcmp(mode, "launchers") && argc > 3)
		return launchers_mode(atoi(argv[2]), atoi(argv[3]));
	if (!strcmp(mode, "keydtor"))
		return keydtor_mode();
	if (!strcmp(mode, "end") && argc > 3)
		return end_mode(argv[0], argv[2], atoi(argv[3]));
	if (!strcmp(mode, "ended")) {
		printf("ended\n");
		return 0;
	}
	if (!strcmp(mode, "cancel"))
		return cancel_mode(argc > 2 ? argv[2] : "sync");
	if (!strcmp(mode, "wait"))
		return wait_mode(argc > 2 ? atoi(argv[2]) : 1000);
	printf("unknown mode %s\n", mode);
	return 2;
}
