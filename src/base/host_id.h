// The identity of this host: hostname plus the kernel's boot id (or
// machine id), so that two containers or namespaces with the same hostname
// on different machines are told apart.
#pragma once

#include <string>

namespace kf {

std::string host_identity();

}  // namespace kf
