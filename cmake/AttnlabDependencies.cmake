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
# TensorBoard event files (protoc and libprotobuf-lite). Debian's libsentencepiece carries its own,
# older copy of protobuf-lite and exports its symbols (libsentencepiece_train calls them), so the
# two copies must not see each other: the runtime is linked statically (attnlab_protobuf_lite) and
# its symbols are kept out of the program's dynamic symbol table (--exclude-libs), so that each
# library's calls stay with its own copy.
find_package(Protobuf 3 REQUIRED)
find_library(ATTNLAB_PROTOBUF_LITE_STATIC NAMES libprotobuf-lite.a REQUIRED)
add_library(attnlab_protobuf_lite STATIC IMPORTED)
set_target_properties(attnlab_protobuf_lite PROPERTIES IMPORTED_LOCATION ${ATTNLAB_PROTOBUF_LITE_STATIC}
                      INTERFACE_INCLUDE_DIRECTORIES "${Protobuf_INCLUDE_DIRS}" INTERFACE_LINK_LIBRARIES Threads::Threads
                      INTERFACE_LINK_OPTIONS "LINKER:--exclude-libs,libprotobuf-lite.a")

if(ATTNLAB_BUILD_TESTS)
  find_package(doctest REQUIRED)
endif()
if(ATTNLAB_BUILD_BENCH)
  find_package(benchmark QUIET)
  if(NOT benchmark_FOUND)
    message(STATUS "attnlab: Google Benchmark not found, bench/ is skipped")
  endif()
endif()

# OpenMPI (libopenmpi-dev) for data-parallel training under mpirun / srun: optional, a build
# without it trains in one process and refuses an MPI launch with a clear message.
find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  set(ATTNLAB_MPI ON)
  message(STATUS "attnlab: MPI found (${MPI_C_LIBRARIES}): data-parallel training is built")
else()
  set(ATTNLAB_MPI OFF)
  message(STATUS "attnlab: MPI not found: data-parallel training is not built (install libopenmpi-dev)")
endif()
