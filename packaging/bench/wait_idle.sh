# Sourced by the bench scripts: wait for idle CPUs before a timed round, where WAIT_IDLE asks for it.
# wait_until_idle returns at once without WAIT_IDLE; with WAIT_IDLE=90 it returns (printing the
# idle share) once the CPUs were at least 90 % idle for 3 s, and exits the script with status 2
# after 30 minutes of waiting in all.

# Percent of the CPUs' time idle over the next 3 s (from /proc/stat).
idle_percent() {
  local _ u n s i w x y z t1 i1
  read -r _ u n s i w x y z _ </proc/stat
  t1=$((u + n + s + i + w + x + y + z)) i1=$((i + w))
  sleep 3
  read -r _ u n s i w x y z _ </proc/stat
  echo $((100 * (i + w - i1) / (u + n + s + i + w + x + y + z - t1)))
}

wait_until_idle() {
  [ -n "${WAIT_IDLE:-}" ] || return 0
  while ((SECONDS < 1800)); do
    local idle
    idle=$(idle_percent)
    ((idle >= WAIT_IDLE)) && { echo "($idle % idle)"; return 0; }
  done
  echo "the CPUs were not $WAIT_IDLE % idle within 30 minutes" >&2
  exit 2
}
