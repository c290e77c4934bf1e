#pragma once
#include <x86intrin.h>
namespace kf {
void probe(int i);
}
