#include "bootstrap/unique_id.h"

#include <cstring>
#include <string>

#include "transport/socket.h"

namespace kf {
namespace {

const char kPrefix[] = "KFID1 ";

}  // namespace

Status create_unique_id(int64_t timeout_ms, kf_unique_id_t* id) {
  RendezvousPoint point;
  KF_RETURN_IF_ERROR(choose_listen_ip(&point.host));
  KF_RETURN_IF_ERROR(random_bytes(point.secret.data(), point.secret.size()));
  KF_RETURN_IF_ERROR(start_rendezvous_server(&point, timeout_ms));
  return encode_unique_id(point, id);
}

Status encode_unique_id(const RendezvousPoint& point, kf_unique_id_t* id) {
  std::string text = kPrefix + join_host_port(point.host, point.port) + " " +
                     secret_to_hex(point.secret);
  if (text.size() + 1 > sizeof(id->internal)) return internal_error("unique id too long");
  std::memset(id->internal, 0, sizeof(id->internal));
  std::memcpy(id->internal, text.data(), text.size());
  return Status::ok();
}

Status decode_unique_id(const kf_unique_id_t& id, RendezvousPoint* point) {
  size_t len = strnlen(id.internal, sizeof(id.internal));
  std::string text(id.internal, len);
  if (len == sizeof(id.internal) || text.compare(0, sizeof(kPrefix) - 1, kPrefix) != 0) {
    return invalid_argument("not a unique id made by kf_get_unique_id()");
  }
  std::string rest = text.substr(sizeof(kPrefix) - 1);
  size_t space = rest.find(' ');
  if (space == std::string::npos) return invalid_argument("malformed unique id");
  KF_RETURN_IF_ERROR(split_host_port(rest.substr(0, space), &point->host, &point->port));
  return secret_from_hex(rest.substr(space + 1), &point->secret);
}

}  // namespace kf
