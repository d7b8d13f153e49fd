#!/bin/bash
# rows.sh: which guest suite each row of make check runs, as the Markdown
# table docs/tests.md shows (the lint checks that the two agree).  Read
# from releases.sh, where check.sh takes its rows from, with every
# debug kernel built (a row whose debug kernel is missing runs its debug
# row's suites itself).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/releases.sh"
cd "$here/../.."

# named_by WORDS SUITE: one of WORDS (SUITES words, patterns allowed)
# names SUITE, a path in the tree (a C suite without its .c)
named_by() {
	local w
	for w in $1; do
		# shellcheck disable=SC2254
		case $2 in $w) return 0 ;; esac
	done
	return 1
}

# in_row WORDS EXCEPT SUITE: the row of those SUITES and SUITES_EXCEPT
# words runs SUITE
in_row() {
	named_by "$1" "$3" && ! named_by "$2" "$3"
}

set -f
suites=()
for w in "${default_suite_words[@]}" tests/debug/faults.sh tests/debug/kmemleak.sh; do
	case $w in
	tests/selftests/*) w=$w.c ;;
	esac
	set +f
	for f in $w; do
		# as run-guest.sh takes them: built C suites, executable scripts
		case $f in
		*.c) suites+=("${f%.c}") ;;
		*) [ ! -x "$f" ] || suites+=("$f") ;;
		esac
	done
	set -f
done

# The stock rows, oldest release first: the older ones (roots), this
# machine's, then the later roots.
releases=("${older_releases[@]}" bookworm)
for rel in "${root_releases[@]}"; do
	case " ${older_releases[*]} " in
	*" $rel "*) ;;
	*) releases+=("$rel") ;;
	esac
done

header="| suite |"
rule="|---|"
words=() excepts=()
for rel in "${releases[@]}"; do
	header+=" $rel |"
	rule+="---|"
	w=$(release_suites "$rel")
	words+=("${w:-${default_suite_words[*]}}")
	excepts+=("$(release_suites_except "$rel") $(debug_suites "$rel")")
done
for rel in bookworm sid; do
	header+=" $rel debug |"
	rule+="---|"
	words+=("$(debug_suites "$rel") tests/debug/faults.sh tests/debug/kmemleak.sh")
	excepts+=("")
done

echo "$header"
echo "$rule"
for s in "${suites[@]}"; do
	line="| \`${s#tests/}\` |"
	for i in "${!words[@]}"; do
		if in_row "${words[$i]}" "${excepts[$i]}" "$s"; then
			line+=" ✓ |"
		else
			line+="   |"
		fi
	done
	echo "$line"
done
