#!/usr/bin/env bash
# Packs this machine's OpenMPI runtime (Debian's openmpi-bin, libopenmpi3 and libpmix2) into a
# pack folder of scripts/pack-gpu.sh, so that `run.sh mpirun -np N attnlab train ...` works on a
# machine without OpenMPI (the GPU machine: data-parallel training over NCCL needs a launcher).
#
#   scripts/pack-openmpi.sh PACK
#
# Writes into PACK:
#   openmpi/bin/       mpirun (Debian's orterun) and orted
#   openmpi/lib/       the MCA components that need nothing beyond the pack and glibc (those for
#                      InfiniBand, UCX, libfabric and PSM are left out: one node needs none)
#   openmpi/pmix/      PMIx's own plugins and help files
#   openmpi/share/, openmpi/etc/   OpenMPI's help files and default parameter files
#   openmpi/env.sh     OPAL_* and PMIX_* install-folder variables pointing into the pack (sourced
#                      by PACK/env.sh), since the compiled-in folders are this machine's
#   lib/               every library the components, mpirun and orted need that PACK/lib lacks
#   openmpi/SOURCES    the folders, programs and libraries of this machine that were copied (what
#                      pack-gpu.sh --verify hides to prove the pack needs none of them)
# Prints the components left out and why.
set -euo pipefail
pack=$(realpath "${1:?usage: scripts/pack-openmpi.sh PACK}")
[[ -d $pack/lib ]] || { echo "pack-openmpi.sh: $pack/lib missing (run scripts/pack-gpu.sh first)" >&2; exit 1; }
command -v ompi_info >/dev/null || { echo "pack-openmpi.sh: OpenMPI is not installed here" >&2; exit 1; }

# This OpenMPI's install folders, as it reports them.
path_of() { ompi_info --path "$1" --parsable | sed -n "s/^path:$1:\(.*\)/\1/p"; }
pkglibdir=$(path_of pkglibdir)
pkgdatadir=$(path_of pkgdatadir)
sysconfdir=$(path_of sysconfdir)
bindir=$(path_of bindir)
[[ -d $pkglibdir && -d $pkgdatadir ]] || { echo "pack-openmpi.sh: no components in '$pkglibdir'" >&2; exit 1; }
libpmix=$(ldconfig -p | awk '/libpmix\.so\.2 .*x86-64/ && !found { print $NF; found = 1 }')
[[ -n $libpmix ]] || libpmix=$(find /usr/lib -name 'libpmix.so.2' -print -quit)
pmix_prefix=$(dirname "$(dirname "$(realpath "$libpmix")")")   # .../pmix2 holds lib/ and share/

dest=$pack/openmpi
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/share" "$dest/etc" "$dest/pmix/lib" "$dest/pmix/share"
cp -L "$bindir/orterun" "$dest/bin/mpirun"
cp -L "$bindir/orted" "$dest/bin/orted"
cp -rL "$pkgdatadir" "$dest/share/openmpi"
cp -L "$sysconfdir"/openmpi-mca-params.conf "$sysconfdir"/openmpi-default-hostfile "$dest/etc/" 2>/dev/null || true
[[ -d $pmix_prefix/lib/pmix ]] && cp -L "$pmix_prefix"/lib/pmix/*.so "$dest/pmix/lib/"
[[ -d $pmix_prefix/share/pmix ]] && cp -rL "$pmix_prefix/share/pmix" "$dest/pmix/share/"

# Libraries of the network stacks a single node does not use: a component needing one stays out.
network_lib() {
  case $1 in
    libfabric.so.*|libucp.so.*|libucs.so.*|libuct.so.*|libucm.so.*|libibverbs.so.*|librdmacm.so.*|libpsm*.so.*|\
    libinfinipath.so.*|libefa.so.*|libnl-*.so.*|liboshmem.so.*|libmca_common_ucx.so.*|\
    libmca_common_ofi.so.*|libmca_common_verbs.so.*) return 0 ;;
  esac
  return 1
}
source "$(dirname "$0")/machine-libs.sh"   # glibc_lib
deps() { ldd "$1" | awk '$2 == "=>" { print $1, $3 }'; }

left_out=()
for component in "$pkglibdir"/*.so; do
  skip=""
  while read -r name path; do
    network_lib "$name" && skip=$name
    [[ $path == /* ]] || skip="$name (not found)"
  done < <(deps "$component")
  if [[ -n $skip ]]; then
    left_out+=("$(basename "$component" .so) ($skip)")
  else
    cp -L "$component" "$dest/lib/"
  fi
done
# Their libraries, mpirun's and orted's, PMIx's plugins': those the pack does not hold yet.
added=()
declare -A added_from
while read -r name path; do
  glibc_lib "$name" && continue
  [[ -e $pack/lib/$name || -e $pack/lib/gcc/$name ]] && continue
  cp -L "$path" "$pack/lib/$name"
  added+=("$name")
  added_from[$name]=$path
done < <(for f in "$dest"/bin/* "$dest"/lib/*.so "$dest"/pmix/lib/*.so; do deps "$f"; done | sort -u)
((${#added[@]})) && printf '%s\n' "${added[@]}" >>"$pack/lib/PACKED"
{
  printf '%s\n' "$pkglibdir" "$pkgdatadir" "$sysconfdir" "$(realpath "$bindir/orterun")" "$(realpath "$bindir/orted")"
  [[ -d $pmix_prefix ]] && echo "$pmix_prefix"
  for name in "${added[@]}"; do realpath "${added_from[$name]}"; done
} >"$dest/SOURCES"

cat >"$dest/env.sh" <<'SH'
# Sourced by the pack's env.sh: OpenMPI and PMIx find their components, help files and parameter
# files in the pack instead of the folders compiled into them.
pack_ompi=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OPAL_PREFIX=$pack_ompi OPAL_BINDIR=$pack_ompi/bin OPAL_LIBDIR=$pack_ompi/lib \
  OPAL_PKGLIBDIR=$pack_ompi/lib OPAL_DATADIR=$pack_ompi/share OPAL_DATAROOTDIR=$pack_ompi/share \
  OPAL_PKGDATADIR=$pack_ompi/share/openmpi OPAL_SYSCONFDIR=$pack_ompi/etc
export PMIX_PREFIX=$pack_ompi/pmix PMIX_LIBDIR=$pack_ompi/pmix/lib PMIX_PKGLIBDIR=$pack_ompi/pmix/lib \
  PMIX_DATADIR=$pack_ompi/pmix/share PMIX_DATAROOTDIR=$pack_ompi/pmix/share \
  PMIX_PKGDATADIR=$pack_ompi/pmix/share/pmix
export PATH=$pack_ompi/bin:$PATH
unset pack_ompi
SH

echo "packed OpenMPI $(ompi_info --parsable | sed -n "s/^ompi:version:full://p")" \
  "into $dest: $(ls "$dest/lib" | wc -l) components, libraries added: ${added[*]:-none}"
echo "left out (they need the libraries of multi-node networks or OpenSHMEM): ${left_out[*]:-none}"
