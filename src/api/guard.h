// Runs the body of a C entry point so that no C++ exception crosses the C
// boundary: an escaping exception becomes a status and a last-error text.
#pragma once

#include <exception>
#include <new>

#include "api/handle.h"

namespace kf {
namespace api {

template <typename Body>
kf_status_t guarded(kf_comm* comm, Body&& body) {
  try {
    return finish(comm, body());
  } catch (const std::bad_alloc&) {
    return fail(comm, system_error("out of memory"));
  } catch (const std::exception& e) {
    return fail(comm, internal_error(std::string("unexpected exception: ") + e.what()));
  } catch (...) {
    return fail(comm, internal_error("unexpected exception"));
  }
}

}  // namespace api
}  // namespace kf
