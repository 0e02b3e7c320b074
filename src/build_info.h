/*
 * What the binary was built from: the project's version and the git commit
 * (short hash, or "unknown" when built out of a git checkout). Defined in a
 * source generated at build time (cmake/build_info.cmake), linked into the
 * daemon and the kubectl plugin. Constant: any thread may read them.
 */
#ifndef SOP_BUILD_INFO_H
#define SOP_BUILD_INFO_H

extern const char sop_build_version[];
extern const char sop_build_commit[];

#endif
