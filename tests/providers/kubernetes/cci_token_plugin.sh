#!/bin/sh
# A test exec credential plugin (client.authentication.k8s.io/v1) standing in for CCI's
# cci-iam-authenticator: prints the first token of the static token file CCI_TOKEN_FILE, valid
# for CCI_TOKEN_TTL seconds (default 3600), and appends one line per run to CCI_PLUGIN_RUNS so
# tests can count the runs. With CCI_PLUGIN_FIRST_REVOKED=1 its first run hands out a token the
# apiserver does not know, as a token revoked before its expiry would be.
set -eu
echo run >>"$CCI_PLUGIN_RUNS"
runs=$(wc -l <"$CCI_PLUGIN_RUNS")
token=$(head -n 1 "$CCI_TOKEN_FILE" | cut -d, -f1)
if [ "${CCI_PLUGIN_FIRST_REVOKED:-0}" = 1 ] && [ "$runs" -eq 1 ]; then token="revoked-$token"; fi
expires=$(date -u -d "+${CCI_TOKEN_TTL:-3600} seconds" +%Y-%m-%dT%H:%M:%SZ)
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
printf '"status":{"token":"%s","expirationTimestamp":"%s"}}\n' "$token" "$expires"
