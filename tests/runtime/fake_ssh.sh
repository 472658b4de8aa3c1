#!/bin/sh
# A stand-in for ssh in tst_launch: skips options, records the host in FAKE_WORKER_DIR/ssh-hosts
# and runs the remote command with sh here, as ssh's remote shell would (ssh joins its arguments
# with spaces into one command line).
while [ $# -gt 0 ]; do
  case $1 in
    -o|-p|-l) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=$1
shift
echo "$host" >>"${FAKE_WORKER_DIR:-.}/ssh-hosts"
exec sh -c "$*"
