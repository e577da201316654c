# Sourced by tools/openblas_cores.sh and tools/onednn_isas.sh: cpu_has FLAG... is true when this
# CPU lists every FLAG in /proc/cpuinfo.
cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
cpu_has() {
  local f
  for f in "$@"; do [[ $cpu_flags == *" $f "* ]] || return 1; done
}
