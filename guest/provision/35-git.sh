#!/bin/sh
# Git in the box asks /usr/local/bin/corral-git-credential (written by
# the first provision script, guest.Installer) for https credentials; it
# answers from the session's CORRAL_GIT_TOKEN_* variables. Idempotent:
# --replace-all with a value pattern keeps exactly one entry across boots.
# Order: before 40-network.sh, which adds http.proxy to the same
# /etc/gitconfig with git config (it must never overwrite the file).
set -eu

command -v git >/dev/null 2>&1 || exit 0
git config --system --replace-all credential.helper /usr/local/bin/corral-git-credential 'corral-git-credential'
