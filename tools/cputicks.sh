# cputicks.sh, sourced by cpuper.sh and cpufloor.sh: ticks prints the CPU
# time of the processes given (utime+stime, fields 14 and 15 of
# /proc/PID/stat, in ticks of 10 ms); a process gone counts 0.
ticks() {
  local sum=0 u s
  for p in "$@"; do
    read -r u s < <(awk '{print $14, $15}' "/proc/$p/stat" 2>/dev/null || echo "0 0")
    sum=$((sum + u + s))
  done
  echo "$sum"
}
