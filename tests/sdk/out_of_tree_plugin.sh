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
# (listings go to a file first: grep -q stops reading at its match, and the writer would die of
# SIGPIPE under pipefail once the listing outgrows one buffer)
"$attnlab" plugins >"$work/installed.log"
grep -q "scaled_dot" "$work/installed.log"
# ... runs the conformance kit on the outside plugin, comparing it with scaled_dot (built from
# ProjectedAttention, it has the same parameters; its default window covers the kit's lengths) ...
"$attnlab" plugins --check "$plugin" --reference scaled_dot | tee "$work/check.log"
# ... including rotary positions, which the plugin opts in to ...
grep -q "\[pass\] attention local_window: positions (rotation): incremental self-attention equals full decoding" "$work/check.log"
grep -q "\[pass\] attention local_window: positions (rotation): outputs and gradients match reference scaled_dot" "$work/check.log"
# ... and lists it once it is on ATTNLAB_PLUGIN_PATH.
ATTNLAB_PLUGIN_PATH="$work/example" "$attnlab" plugins >"$work/with-example.log"
grep -q "local_window 0.3.0" "$work/with-example.log"
echo "out-of-tree plugin built against the installed SDK, loaded and checked"
