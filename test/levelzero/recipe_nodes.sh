#!/bin/sh
# The README's 1000-rank recipe ("Long runs", job.sh) on one machine: NODES fake nodes of
# TASKS ranks each. `srun` is a shell function that starts its command once per task (or,
# with --ntasks-per-node=1, once per node), with the task's SLURM_PROCID; a node's local
# run directory, the same path on every real node, is a folder of its own per fake node
# here ($GPUTRACE_RUN_DIR/nodeN). The job body below is the README's, but for the
# warm-up: instead of sleep 600, until every rank is announced on its node.
# usage: recipe_nodes.sh GPUTRACE TRACE_DIR RUN_DIR CMD [ARGS...]   (CMD: each rank's program)
set -eu
gputrace=$1 trace=$2
export GPUTRACE_RUN_DIR=$3
shift 3
NODES=2 TASKS=2

srun() {
	per_node=$TASKS
	while :; do
		case $1 in
		--overlap) shift ;;
		--ntasks-per-node=1) per_node=1; shift ;;
		*) break ;;
		esac
	done
	pids=
	n=0
	while [ $n -lt $NODES ]; do
		t=0
		while [ $t -lt $per_node ]; do
			SLURM_PROCID=$((n * TASKS + t)) SLURM_NODEID=$n \
				GPUTRACE_RUN_DIR=$GPUTRACE_RUN_DIR/node$n "$@" &
			pids="$pids $!"
			t=$((t + 1))
		done
		n=$((n + 1))
	done
	st=0
	for p in $pids; do wait "$p" || st=$?; done
	return $st
}

warm_up() {
	n=0
	while [ $n -lt $NODES ]; do
		tries=0
		until [ "$(ls "$GPUTRACE_RUN_DIR/node$n" 2>/dev/null | wc -l)" -ge $TASKS ]; do
			tries=$((tries + 1))
			[ $tries -lt 400 ] || { echo "recipe_nodes: node $n: ranks not announced" >&2; exit 1; }
			sleep 0.05
		done
		n=$((n + 1))
	done
}

mkdir -p "$trace"
srun "$gputrace" run --start paused -o "$trace/rank%r-%p.json" -- "$@" &
job=$!
warm_up
srun --overlap --ntasks-per-node=1 "$gputrace" capture --duration 0.3 --all
wait $job
"$gputrace" merge -o "$trace.json" "$trace"/rank*.json
