#!/usr/bin/env bash
# Installs the SDK from a build tree into a scratch prefix, builds examples/plugin-template against
# it as an outside project would, and has the installed attnlab load and check that plugin.
# usage: out_of_tree_plugin.sh BUILD_DIR SOURCE_DIR CXX_COMPILER
# (the compiler of the build: a plugin built by another is refused for its build id)
set -euo pipefail
build=$1
source=$2
cxx=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
cmake -S "$source/examples/plugin-template" -B "$work/example" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CXX_COMPILER="$cxx" >"$work/configure.log"
cmake --build "$work/example" >"$work/build.log"

attnlab="$work/prefix/bin/attnlab"
plugin="$work/example/attnlab_attention_local_window.so"
# The installed program finds its installed plugins with no path set ...
"$attnlab" plugins | grep -q "scaled_dot"
# ... runs the conformance kit on the outside plugin, comparing it with scaled_dot (built from
# ProjectedAttention, it has the same parameters; its default window covers the kit's lengths) ...
"$attnlab" plugins --check "$plugin" --reference scaled_dot
# ... and lists it once it is on ATTNLAB_PLUGIN_PATH.
ATTNLAB_PLUGIN_PATH="$work/example" "$attnlab" plugins | grep -q "local_window 0.2.0"
echo "out-of-tree plugin built against the installed SDK, loaded and checked"
