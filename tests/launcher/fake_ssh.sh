#!/bin/sh
# fake_ssh.sh HOST COMMAND: starts COMMAND the way ssh does on a remote host,
# for the launcher tests on one machine. COMMAND runs under sh in a session
# of its own, so a signal to this client or its process group does not reach
# it, with its stdin a FIFO that this client holds open: it reads end of
# file once the client dies, as a remote command does when its connection
# closes. The client forwards nothing and exits with COMMAND's status.
# (setsid -w: util-linux.)
set -u
dir=$(mktemp -d "${TMPDIR:-/tmp}/kf_fake_ssh.XXXXXX") || exit 255
mkfifo "$dir/in" || { rmdir "$dir"; exit 255; }
setsid -w sh -c "$2" <"$dir/in" &
remote=$!
exec 3>"$dir/in"  # (opens once the command has opened the other end)
rm -rf "$dir"
wait "$remote"
