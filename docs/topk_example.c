/* Top-k sparsification of a gradient with kf_topk (kungfu/sparse.h): keep the 1% of
 * entries of largest magnitude as (value, index) pairs, with MSTopK and exactly. */
#include <kungfu/kungfu.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  const uint64_t d = 1000000, k = d / 100;
  float* grad = malloc(d * sizeof(float));
  float* values = malloc(k * sizeof(float));
  uint32_t* indices = malloc(k * sizeof(uint32_t));
  if (grad == NULL || values == NULL || indices == NULL) return 1;
  for (uint64_t i = 0; i < d; ++i) grad[i] = sinf((float)i * 0.37f) * (float)(i % 1000);

  kf_topk_options_t opts = KF_TOPK_OPTIONS_INITIALIZER;
  opts.seed = 7; /* e.g. the training step: a new band window every step */
  double mass[2] = {0.0, 0.0};
  for (int algo = 0; algo < 2; ++algo) {
    kf_status_t s = kf_topk(grad, d, k, algo == 0 ? KF_TOPK_MSTOPK : KF_TOPK_EXACT, &opts,
                            values, indices);
    if (s != KF_SUCCESS) {
      fprintf(stderr, "kf_topk: %s: %s\n", kf_status_string(s), kf_comm_last_error(NULL));
      return 1;
    }
    /* values[j] == grad[indices[j]], indices ascending. */
    for (uint64_t j = 0; j < k; ++j) mass[algo] += fabsf(values[j]);
  }
  printf("MSTopK keeps %.4f of the exact top-k L1 mass\n", mass[0] / mass[1]);
  free(grad);
  free(values);
  free(indices);
  return mass[0] >= 0.95 * mass[1] ? 0 : 1;
}
