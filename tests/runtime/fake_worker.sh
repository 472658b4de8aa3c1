#!/bin/sh
# A stand-in for hap-worker in tst_launch: reads the torchrun environment like the real worker and
# behaves as FAKE_WORKER_MODE says. FAKE_WORKER_DIR is a folder for its pid and record files.
#   chatty  print the environment and arguments, 200 long lines, a line on stderr, and a last
#           line without a newline; exit 0
#   fail    rank 1 waits until every other rank has written its pid, prints an error and exits 3;
#           the others sleep 60 s (in a child process, to check the whole group is stopped)
#   sleep   every rank sleeps 60 s in a child process
#   busy    ranks 0 and 1 count busy-loop rounds for FAKE_WORKER_MS (default 1500) ms of wall
#           time and print "busy RANK ROUNDS CPU-TICKS TICKS-PER-SECOND"; the others exit 0 at once
#   record  write the environment and arguments to FAKE_WORKER_DIR/rank-RANK.txt (rank 0 also
#           writes "recorded by rank 0" into the file after --record, if any); exit 0
set -u
dir=${FAKE_WORKER_DIR:-.}
rank=${RANK:-unset}

sleep_in_child() {
  echo $$ >"$dir/pid-$rank"
  sleep 60 &
  echo $! >"$dir/child-$rank"
  wait
  echo "rank $rank woke up"
}

case ${FAKE_WORKER_MODE:-chatty} in
  chatty)
    echo "env RANK=$RANK WORLD_SIZE=$WORLD_SIZE LOCAL_RANK=$LOCAL_RANK MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}"
    for a in "$@"; do echo "arg <$a>"; done
    i=0
    while [ $i -lt 200 ]; do
      echo "line $rank $i ................................................................................................ $rank"
      i=$((i + 1))
    done
    echo "to stderr $rank" >&2
    printf 'partial %s' "$rank"
    ;;
  fail)
    if [ "$rank" = 1 ]; then
      waited=0
      while [ "$(ls "$dir" | grep -c '^child-')" -lt $((WORLD_SIZE - 1)) ] && [ $waited -lt 400 ]; do
        sleep 0.05
        waited=$((waited + 1))
      done
      echo "about to fail" >&2
      echo "hap-worker: error: rank 1 could not read its shard (test)" >&2
      echo "a last line, not the failure message" >&2
      exit 3
    fi
    sleep_in_child
    ;;
  sleep)
    sleep_in_child
    ;;
  busy)
    if [ "$rank" != 0 ] && [ "$rank" != 1 ]; then exit 0; fi
    # bash in this same process (exec), reading its clock without forking: the launcher's CPU
    # quota counts the worker process, not processes it starts.
    exec bash -c '
      now() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }
      end=$(( $(now) + ${FAKE_WORKER_MS:-1500} * 1000 ))
      count=0
      while :; do
        i=0
        while [ $i -lt 200 ]; do i=$((i + 1)); done
        count=$((count + 1))
        t=${EPOCHREALTIME/./}
        if [ $((10#$t)) -ge "$end" ]; then break; fi
      done
      # CPU time of this process in clock ticks: utime and stime, the 12th and 13th fields after
      # the command name.
      stat=$(cat /proc/$$/stat)
      set -- ${stat##*) }
      shift 11
      echo "busy '"$rank"' $count $(($1 + $2)) $(getconf CLK_TCK)"
    '
    ;;
  record)
    {
      for v in RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE GROUP_RANK MASTER_ADDR MASTER_PORT HAP_TIMEOUT_S; do
        eval "echo \"$v=\${$v-unset}\""
      done
      for a in "$@"; do printf 'arg <%s>\n' "$a"; done
    } >"$dir/rank-$rank.txt"
    # --record FILE: rank 0 writes "recorded by rank 0" there, as hap-worker writes its store.
    next=
    for a in "$@"; do
      if [ "$next" = record ] && [ "$rank" = 0 ]; then echo "recorded by rank 0" >"$a"; fi
      next=
      if [ "$a" = --record ]; then next=record; fi
    done
    ;;
  *)
    echo "fake_worker.sh: error: unknown FAKE_WORKER_MODE" >&2
    exit 2
    ;;
esac
