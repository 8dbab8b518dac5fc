#!/usr/bin/env bash
# Issue 7's ratio on this machine: Slurm's `sbatch` (scripts/slurm-sbatch-rate.sh)
# and `phx sbatch` (scripts/sbatch-rate.sh) submitting N jobs from SHELLS
# concurrent shells, alternated ROUNDS times so that both see the machine in
# the same state, then each round's rates, their ratio, and the medians.
# Each phx run also times `phx sbatch --help` from as many shells (its
# ceiling phase): what no submit through phx can pass on this host, even
# if the controllers cost nothing.
#
# Usage: scripts/sbatch-vs-slurm.sh [-r ROUNDS] [-s SHELLS] [-k DIR] [-B BUNDLE] [N]
#   N          submits per run (default 2000)
#   -r ROUNDS  Slurm/phx pairs (default 3)
#   -s SHELLS  concurrent shells (default 8)
#   -k DIR     keep each run's full output in DIR
#   -B BUNDLE  Debian's Slurm as made by scripts/slurm-bundle.sh, unpacked
#              at / if Slurm is missing (a host that cannot install it)
# Slurm must be installed (slurm-sbatch-rate.sh installs it with apt-get as
# root, or unpacks -B's bundle); phx's binaries are built when missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=3 shells=8 keepdir='' bundle=()
while getopts 'r:s:k:B:h' o; do
	case $o in
	r) rounds=$OPTARG ;;
	s) shells=$OPTARG ;;
	k) keepdir=$OPTARG ;;
	B) bundle=(-B "$OPTARG") ;;
	*) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
n=${1:-2000}
out=${keepdir:-$(mktemp -d /tmp/sbatch-vs-slurm.XXXXXX)}
mkdir -p "$out"
[ -n "$keepdir" ] || trap 'rm -rf "$out"' EXIT

# rate FILE [PATTERN]: jobs/s of the last "N shells" row of a rate
# script's output (that matches PATTERN).
rate() {
	awk -v p="${2:-}" '$0 ~ p {for (i = 1; i <= NF; i++) if ($i == "shells" && $(i+1) ~ /^[0-9]+$/) r = $(i+5)} END {print r}' "$1"
}

slurm=() phx=() ceil=()
for ((i = 1; i <= rounds; i++)); do
	"$here/slurm-sbatch-rate.sh" "${bundle[@]}" -m par -s "$shells" "$n" >"$out/slurm-$i.txt" 2>&1 || { tail -20 "$out/slurm-$i.txt" >&2; exit 1; }
	"$here/sbatch-rate.sh" -m ceiling,par -s "$shells" "$n" >"$out/phx-$i.txt" 2>&1 || { tail -20 "$out/phx-$i.txt" >&2; exit 1; }
	slurm+=("$(rate "$out/slurm-$i.txt")") phx+=("$(rate "$out/phx-$i.txt" '^phx sbatch [0-9]')") ceil+=("$(rate "$out/phx-$i.txt" '^phx sbatch --help')")
	printf 'round %d: Slurm %s jobs/s, phx %s jobs/s (phx sbatch --help %s/s)\n' "$i" "${slurm[-1]}" "${phx[-1]}" "${ceil[-1]}" >&2
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "== $n submits from $shells shells, $rounds rounds, $(nproc) CPUs"
printf '%-6s %12s %12s %8s %14s\n' round "Slurm jobs/s" "phx jobs/s" ratio "phx ceiling/s"
for ((i = 0; i < rounds; i++)); do
	awk -v r=$((i + 1)) -v s="${slurm[i]}" -v p="${phx[i]}" -v c="${ceil[i]}" 'BEGIN{printf "%-6s %12.1f %12.1f %7.2fx %14.1f\n", r, s, p, p / s, c}'
done
ms=$(median "${slurm[@]}") mp=$(median "${phx[@]}") mc=$(median "${ceil[@]}")
best=$(printf '%s\n' "${slurm[@]}" | sort -g | tail -1)
awk -v s="$ms" -v p="$mp" -v c="$mc" -v b="$best" 'BEGIN{
	printf "median %12.1f %12.1f %7.2fx %14.1f (against Slurm'"'"'s best run: %.2fx)\n", s, p, p / s, c, p / b
	printf "phx ceiling: `phx sbatch --help` from the same shells, served with no controller call: %.2fx Slurm'"'"'s median\n", c / s}'
