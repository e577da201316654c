# Every dependency comes from a Debian package (scripts/setup.sh installs them).
find_package(PkgConfig REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(fmt REQUIRED)
find_package(Threads REQUIRED)

# OpenBLAS, OpenMP flavour (libopenblas-openmp-dev): it shares the OpenMP thread pool with our kernels.
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)

# Used by later layers; found here so that a missing package fails at configure time, not mid-build.
find_package(Boost 1.74 REQUIRED)  # headers only: Boost.DLL over std::filesystem
pkg_check_modules(TOMLPLUSPLUS REQUIRED IMPORTED_TARGET tomlplusplus)
pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)  # content hashes and checksums
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)  # Unicode-property regexes (BLEU intl tokenizer)
find_package(ZLIB REQUIRED)                                  # .gz corpora
find_package(nlohmann_json 3 REQUIRED)                       # checkpoint metadata, metrics
find_package(CLI11 2 REQUIRED)                                # the command line (typed, checked options)
# TensorBoard event files (protoc and libprotobuf-lite): optional, a build without them writes
# metrics.jsonl and the evaluation records only (ATTNLAB_PROTOBUF=AUTO|ON|OFF -> ATTNLAB_WITH_PROTOBUF).
# Debian's libsentencepiece carries its own, older copy of protobuf-lite and exports its symbols
# (libsentencepiece_train calls them), so the two copies must not see each other: the runtime is
# linked statically (attnlab_protobuf_lite) and its symbols are kept out of the program's dynamic
# symbol table (--exclude-libs), so that each library's calls stay with its own copy.
set(ATTNLAB_PROTOBUF "AUTO" CACHE STRING "Write TensorBoard event files (needs protobuf): AUTO, ON or OFF")
set_property(CACHE ATTNLAB_PROTOBUF PROPERTY STRINGS AUTO ON OFF)
set(ATTNLAB_WITH_PROTOBUF OFF)
set(attnlab_protobuf_feature "TensorBoard event files (metrics.jsonl is written either way)")
if(ATTNLAB_PROTOBUF STREQUAL "OFF")
  message(STATUS "attnlab: ${attnlab_protobuf_feature} off: ATTNLAB_PROTOBUF=OFF")
else()
  attnlab_probe(protobuf RESULT attnlab_protobuf_works WHY attnlab_protobuf_why)
  if(attnlab_protobuf_works)
    find_package(Protobuf 3 REQUIRED)
    find_library(ATTNLAB_PROTOBUF_LITE_STATIC NAMES libprotobuf-lite.a REQUIRED)
    add_library(attnlab_protobuf_lite STATIC IMPORTED)
    set_target_properties(attnlab_protobuf_lite PROPERTIES IMPORTED_LOCATION ${ATTNLAB_PROTOBUF_LITE_STATIC}
                          INTERFACE_INCLUDE_DIRECTORIES "${Protobuf_INCLUDE_DIRS}" INTERFACE_LINK_LIBRARIES Threads::Threads
                          INTERFACE_LINK_OPTIONS "LINKER:--exclude-libs,libprotobuf-lite.a")
    set(ATTNLAB_WITH_PROTOBUF ON)
  else()
    attnlab_optional_off("${attnlab_protobuf_feature}" "${attnlab_protobuf_why}" "libprotobuf-dev protobuf-compiler"
                         ATTNLAB_PROTOBUF)
  endif()
endif()

if(ATTNLAB_BUILD_TESTS)
  find_package(doctest REQUIRED)
endif()
if(ATTNLAB_BUILD_BENCH)
  find_package(benchmark QUIET)
  if(NOT benchmark_FOUND)
    message(STATUS "attnlab: benchmarks (bench/) off: Google Benchmark not found (install libbenchmark-dev)")
  endif()
endif()

# OpenMPI (libopenmpi-dev) for data-parallel training under mpirun / srun: optional, a build
# without it trains in one process and refuses an MPI launch with a clear message.
find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  set(ATTNLAB_MPI ON)
  message(STATUS "attnlab: MPI found (${MPI_C_LIBRARIES}): data-parallel training is built (NCCL, for GPUs, is loaded at run time: libnccl2)")
else()
  set(ATTNLAB_MPI OFF)
  message(STATUS "attnlab: data-parallel training over MPI off: no working MPI found (install libopenmpi-dev openmpi-bin)")
endif()
