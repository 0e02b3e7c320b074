# Cross-compiles for arm64 (aarch64) with Debian's cross toolchain
# (gcc-aarch64-linux-gnu):
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         [-DSOP_ARM64_SYSROOT=DIR]
# The arm64 -dev libraries come from SOP_ARM64_SYSROOT, a Debian arm64 root
# (scripts/build-arm64 makes one with mmdebstrap), or, without it, from the
# host's multiarch directories (dpkg --add-architecture arm64 and
# libcurl4-openssl-dev:arm64 ...). Tests and --version run under qemu-user.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)

set(SOP_ARM64_SYSROOT "$ENV{SOP_ARM64_SYSROOT}" CACHE PATH "Debian arm64 root with the -dev libraries (empty: host multiarch)")
# try_compile projects see the same sysroot.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES SOP_ARM64_SYSROOT)

set(multiarch_dir lib/aarch64-linux-gnu)
if(SOP_ARM64_SYSROOT)
  set(CMAKE_SYSROOT "${SOP_ARM64_SYSROOT}")
  set(CMAKE_FIND_ROOT_PATH "${SOP_ARM64_SYSROOT}")
  set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L "${SOP_ARM64_SYSROOT}")
else()
  set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
endif()
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config reads only the arm64 .pc files, and prefixes their paths with the sysroot.
set(ENV{PKG_CONFIG_LIBDIR} "${SOP_ARM64_SYSROOT}/usr/${multiarch_dir}/pkgconfig:${SOP_ARM64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${SOP_ARM64_SYSROOT}")
