# The E2B template the e2b kind runs: the Runtime daemon, the `runtime` user
# (uid/gid 1000) commands run as, and the init the adapter runs once per
# sandbox. Build it with E2B's template tooling; its build id pins the
# kind's `template` selector (`<template>:<build UUID>`).
FROM debian:12-slim
RUN groupadd --gid 1000 runtime \
 && useradd --uid 1000 --gid 1000 --create-home --home-dir /home/runtime runtime
# The Runtime daemon, provided by the Runtime's release.
COPY oac-daemon /usr/local/bin/oac-daemon
COPY oac-e2b-init /usr/local/bin/oac-e2b-init
RUN chmod 0755 /usr/local/bin/oac-daemon /usr/local/bin/oac-e2b-init
