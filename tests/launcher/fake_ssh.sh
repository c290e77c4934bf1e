#!/bin/sh
# fake_ssh.sh HOST COMMAND: starts COMMAND the way ssh does on a remote host,
# for the launcher tests on one machine. COMMAND runs under sh in a session
# of its own, so a signal to this client or its process group does not reach
# it, with its stdin a FIFO that this client holds open: it reads end of
# file once the client dies, as a remote command does when its connection
# closes. The client forwards nothing and exits with COMMAND's status.
set -u
fifo=$(mktemp -u "${TMPDIR:-/tmp}/kf_fake_ssh.XXXXXX")
mkfifo "$fifo" || exit 255
setsid -w sh -c "$2" <"$fifo" &
remote=$!
exec 3>"$fifo"  # (opens once the command has opened the other end)
rm -f "$fifo"
wait "$remote"
