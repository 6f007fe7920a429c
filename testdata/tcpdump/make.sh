#!/usr/bin/env bash
# Regenerates testdata/tcpdump/NAME.dd from filters.txt with the installed
# tcpdump, compiled for the capture's link type (Ethernet, snap length 262144),
# the live_* ones for the loopback device (needs root).
# Not run by CI: the .dd files are committed (see README.md for the version).
set -euo pipefail
cd "$(dirname "$0")"
pcap=../pcap/capture3000.pcap
while IFS=$'\t' read -r name expr; do
    case "$name" in ''|'#'*) continue ;; esac
    case "$name" in
        live_*) tcpdump -dd -i lo "$expr" > "$name.dd" ;;
        *) tcpdump -dd -r "$pcap" "$expr" > "$name.dd" ;;
    esac
done < filters.txt
