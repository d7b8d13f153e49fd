#!/bin/bash
# Turn one guest run of bench/guest-bench.sh into a Markdown report and a PNG
# bar chart, and print the report.
#
#   bench/report.sh RUNDIR [REPORT.md]
#
# RUNDIR holds data.csv, ctl.csv and meta.txt. REPORT.md defaults to
# RUNDIR/results-<kernel>.md; the chart goes next to it as .png.
# Medians over the rounds; noise: see summary().
# Nothing here passes or fails on a number: the goal column only says
# where loopfs stands against the performance goals (see rows()).
set -euo pipefail

run=${1:?usage: report.sh RUNDIR [REPORT.md]}
for f in data.csv ctl.csv meta.txt; do
	[ -r "$run/$f" ] || { echo "report: $run/$f missing" >&2; exit 1; }
done
kver=$(sed -n 's/^kernel=//p' "$run/meta.txt")
md=${2:-$run/results-$kver.md}
png=${md%.md}.png
dat=${md%.md}.dat

declare -A meta
while IFS='=' read -r k v; do meta[$k]=$v; done < "$run/meta.txt"
metav() { echo "${meta[$1]:-}"; }

# summary CSV [A B C]: per case of CSV (data.csv's columns), the median over
# the rounds of each target A, B and C (default stock, loopfs, raw), and the
# noise of the B/A ratio: half the range of the per-round ratios (each round
# runs the targets back to back, so slow drift of the host cancels out)
# relative to their median.
# Output: backing workload unit A B C noise_pct   ("-" if absent)
summary() {
	awk -F, -v ta="${2:-stock}" -v tb="${3:-loopfs}" -v tc="${4:-raw}" '
	function median(a, n,   i, j, tmp) {
		if (!n) return "-"
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
				tmp = a[j]; a[j] = a[j - 1]; a[j - 1] = tmp }
		return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function target_median(k, t,   a, n, r) {
		n = 0; for (r = 1; r <= maxr; r++) if ((k, t, r) in v) a[++n] = v[k, t, r]
		return median(a, n)
	}
	function ratio_noise(k,   a, n, r, m) {
		n = 0
		for (r = 1; r <= maxr; r++)
			if ((k, tb, r) in v && (k, ta, r) in v && v[k, ta, r] > 0)
				a[++n] = v[k, tb, r] / v[k, ta, r]
		if (n < 2) return "-"
		m = median(a, n)	# sorts a
		return m > 0 ? sprintf("%.0f", (a[n] - a[1]) / 2 / m * 100) : "-"
	}
	NR > 1 && $5 != "NA" {
		k = $1 SUBSEP $2; unit[k] = $6; v[k, $3, $4] = $5 + 0
		if ($4 + 0 > maxr) maxr = $4 + 0
		if (!(k in order)) { order[k] = ++nk; byord[nk] = k }
	}
	END {
		for (o = 1; o <= nk; o++) {
			k = byord[o]; split(k, p, SUBSEP)
			printf "%s %s %s %s %s %s %s\n", p[1], p[2], unit[k],
				target_median(k, ta), target_median(k, tb),
				target_median(k, tc), ratio_noise(k)
		}
	}' "$1"
}

# rows: summary() lines -> Markdown table rows on stdout and the chart's
# data file; one awk for all of it (every fork costs in a TCG guest).
# Performance goals: loopfs >= 1.0x stock everywhere, >= 5x / 1.3x for 4k
# random read at QD1 / QD32 from tmpfs, >= 1.5x for four jobs of depth 8,
# >= 0.85x raw for 1M sequential read and for 4k random read at QD32 from
# tmpfs.
rows() {
	awk -v dat="$dat" '
	function ratio(a, b) { return (a == "-" || b == "-" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
	function fmt(x) { return x == "-" ? "-" : (x >= 100 ? sprintf("%.0f", x) : sprintf("%.1f", x)) }
	function verdict(r, g, n) {
		if (r == "-" || g == "-") return "-"
		if (r + 0 >= g + 0) return "met"
		if (n != "-" && r + 0 >= g * (1 - n / 100)) return "within noise"
		return "not met"
	}
	{
		b = $1; w = $2; st = $4; lf = $5; raw = $6; nz = $7
		gs = "1.0"; gr = "-"
		if (b == "tmpfs" && w == "randread-4k-qd1") gs = "5.0"
		if (b == "tmpfs" && w == "randread-4k-qd32") { gs = "1.3"; gr = "0.85" }
		if (w ~ /-4x8$/) gs = "1.5"
		if (w == "read-1m") gr = "0.85"
		rs = ratio(lf, st); rr = ratio(lf, raw); sr = ratio(st, raw)
		goal = "≥" gs "× stock"; status = verdict(rs, gs, nz)
		if (gr != "-") { goal = goal ", ≥" gr "× raw"; status = status " / " verdict(rr, gr, nz) }
		printf "| %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", b, w, $3,
			fmt(st), fmt(lf), fmt(raw), rs, rr, sr, nz, goal, status
		printf "\"%s %s\" %s %s\n", b, w, sr == "-" ? 0 : sr, rr == "-" ? 0 : rr > dat
	}'
}

{
	echo "# loopfs benchmark: $kver"
	echo
	echo "Guest: $(metav cpus) vCPU, $(metav mode) run, $(metav rounds) round(s) of" \
		"$(metav runtime) per fio run (+$(metav ramp) ramp), backing file $(metav file_mb) MiB;" \
		"ext4 on $(metav ext4_disk). loopfs module: $(metav loopfs)."
	if [ -n "$(metav host_load)" ]; then
		echo "Host: $(metav host_cpus) CPUs, load average $(metav host_load) (start -> end)," \
			"QEMU processes running $(metav host_other_guests): TCG guests share the host's cores," \
			"so absolute numbers move with the load; the targets run back to back in every round."
	fi
	echo "Loop dio (sysfs loop/dio) stock tmpfs/ext4: $(metav dio_stock_tmpfs)/$(metav dio_stock_ext4)," \
		"loopfs: $(metav dio_loopfs_tmpfs)/$(metav dio_loopfs_ext4)."
	echo "Medians over rounds; 4k cases in IOPS, 1M cases in MiB/s. noise: half the range of" \
		"the per-round loopfs/stock ratios (targets run back to back in each round) relative to" \
		"their median; a goal missed by less than that is reported as within noise."
	echo
	echo "| backing | workload | stock | loopfs | raw file | loopfs/stock | loopfs/raw | stock/raw | noise ±% | goal | status |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"
	: > "$dat"
	summary "$run/data.csv" | rows
	echo
	echo "Control path: create + configure + clear + remove cycles, $(metav ctl_cycles) per round;" \
		"medians over the rounds of each round's median cycle time. \"few\" is measured before" \
		"populating and again after removing the extra devices (both brackets count)."
	echo
	echo "| target | devices | instances | cycles/s | per-cycle ms (median) | IQR ms | per-cycle vs few |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	awk -F, 'NR > 1 {
		k = $1 SUBSEP $2; if (!(k in seen)) { seen[k] = ++n; ord[n] = k }
		c = ++cnt[k]; ps[k, c] = $6; md[k, c] = $7; iq[k, c] = $9 - $8
		dev[k] = $3; inst[k] = $4
	}
	function med(arr, k,   i, j, a, m, tmp) {
		m = cnt[k]; for (i = 1; i <= m; i++) a[i] = arr[k, i] + 0
		for (i = 2; i <= m; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
				tmp = a[j]; a[j] = a[j - 1]; a[j - 1] = tmp }
		return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	}
	END {
		for (o = 1; o <= n; o++) {
			k = ord[o]; split(k, p, SUBSEP)
			m = med(md, k); few = p[1] SUBSEP "few"
			rel = (few in seen) ? sprintf("%.2f", m / med(md, few)) : "-"
			printf "| %s (%s) | %d | %s | %.1f | %.1f | %.1f | %s |\n", p[1], p[2],
				dev[k], p[1] == "stock" ? "-" : inst[k], med(ps, k), m / 1000, med(iq, k) / 1000, rel
		}
	}' "$run/ctl.csv"
	if [ "$(wc -l < "$run/ct.csv" 2>/dev/null || echo 0)" -gt 1 ]; then
		echo
		echo "Unprivileged container (root = an unprivileged host uid): an ext4 image that the" \
			"container made itself, mounted with mount -o loop through loopfs-run, fio in the" \
			"container on a $(metav ct_file_mb) MiB file in it; the image lies on the ext4 disk." \
			"kernel: the kernel's ext4 on a loopfs device (ID-mapped mount made by the supervisor);" \
			"fuse2fs: loopfs-run --fuse ext4=fuse2fs, fuse2fs run by the container on the same" \
			"device. Both back to back in every round. O_DIRECT (1) or buffered (0, the" \
			"filesystem refused O_DIRECT): kernel $(metav ct_direct_kernel), fuse2fs" \
			"$(metav ct_direct_fuse). noise: as above, for the kernel/fuse2fs ratio."
		echo
		echo "| workload | kernel ext4 | fuse2fs | kernel/fuse2fs | noise ±% |"
		echo "|---|---:|---:|---:|---:|"
		summary "$run/ct.csv" fuse kernel - | awk '
		function fmt(x) { return x == "-" ? "-" : (x >= 100 ? sprintf("%.0f", x) : sprintf("%.1f", x)) }
		{
			r = ($4 == "-" || $5 == "-" || $4 + 0 == 0) ? "-" : sprintf("%.1f", $5 / $4)
			printf "| %s (%s) | %s | %s | %s | %s |\n", $2, $3, fmt($5), fmt($4), r, $7 }'
	fi
	echo
	echo "devices = block devices of that driver existing while measuring (stock: /sys/block/loopN," \
		"loopfs: /sys/block/loopfs*), instances = loopfs mounts. Populating took $(metav populate_s) s;" \
		"data path $(metav data_path_s) s, container case $(metav container_s) s, control path" \
		"$(metav control_path_s) s."
} > "$md"

if command -v gnuplot > /dev/null && [ -s "$dat" ]; then
	term=png
	gnuplot -e 'set terminal' < /dev/null 2>&1 | grep -qw pngcairo && term=pngcairo
	gnuplot <<-EOF > /dev/null
		set terminal $term size 1100,520
		set output "$png"
		set title "loopfs vs stock loop, $kver (throughput relative to fio on the backing file)"
		set style data histograms
		set style histogram clustered gap 1
		set style fill solid 0.8 border -1
		set ylabel "x raw backing file"
		set yrange [0:*]
		# Room above the tallest bar and right of the last rotated label.
		set offsets 0, 0, graph 0.05, 0
		set rmargin 12
		set grid ytics
		set xtics rotate by -35 font ",9" noenhanced
		set key top right
		set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb "black"
		plot "$dat" using 2:xtic(1) title "stock loop" lc rgb "#999999", \
		     "" using 3 title "loopfs" lc rgb "#2060c0"
	EOF
	echo "chart: $png" >> "$md"
else
	echo "report: gnuplot missing, no chart" >&2
fi
cat "$md"
