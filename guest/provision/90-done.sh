#!/bin/sh
# Last: the provisioning marker. corral waits for it and doctor checks it;
# a failing earlier script stops Lima's provisioning before this runs.
set -eu
printf '%s\n' "${PARAM_TEMPLATE_HASH:-unknown}" >/etc/corral/provisioned
