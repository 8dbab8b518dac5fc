#!/usr/bin/env bash
# Debian's Slurm 22.05 (slurmctld, sbatch and the other client commands,
# their plugins) and munge as one tarball, for scripts/slurm-sbatch-rate.sh
# on a host that cannot install Debian's packages (no network, another
# distribution): the baseline of issue 7's ratio on a machine lent for the
# measurement.
#
# Usage: scripts/slurm-bundle.sh OUT.txz
# Run on a Debian 12 machine: installs the packages with apt-get first if
# they are missing (root). Takes the files the packages installed (dpkg -L:
# no documentation, no directories), xz-compressed, about 3 MB. The
# libraries they link (libc, liblz4, ...) are not included: a recent glibc
# host has them.
# To use it: scripts/slurm-sbatch-rate.sh -B OUT.txz (or
# scripts/sbatch-vs-slurm.sh -B OUT.txz), as root: unpacked at / when
# sbatch, slurmctld or munged is missing there.
set -euo pipefail
[ $# = 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2; }
out=$1
pkgs=(slurmctld slurm-client slurm-wlm-basic-plugins munge libmunge2)
if ! dpkg -s "${pkgs[@]}" >/dev/null 2>&1; then
	[ "$(id -u)" = 0 ] || { echo "slurm-bundle: ${pkgs[*]} are not all installed: run as root to apt-get install them" >&2; exit 1; }
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}" >&2
fi
list=$(mktemp)
trap 'rm -f "$list"' EXIT
# Files and links, not directories, less documentation and the services'
# files (the script runs both daemons itself); Debian's
# alternatives link (/usr/sbin/slurmctld -> /etc/alternatives/...) is left
# out: slurm-sbatch-rate.sh links slurmctld to slurmctld-wlm when it unpacks.
dpkg -L "${pkgs[@]}" | while read -r f; do
	case $f in /usr/share/doc/* | /usr/share/man/* | /etc/* | /lib/systemd/* | /usr/lib/systemd/* | /usr/sbin/slurmctld) continue ;; esac
	if [ -f "$f" ] || [ -L "$f" ]; then
		[ -d "$f" ] || echo "${f#/}"
	fi
done | sort -u >"$list"
tar -C / --no-recursion -cJf "$out" -T "$list"
echo "$out: $(wc -l <"$list") files of ${pkgs[*]}, $(du -h "$out" | cut -f1)" >&2
