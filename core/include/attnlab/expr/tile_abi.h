#pragma once
/* The argument of the compiled CPU kernels of score expressions (score_kernels.h): one tile of
 * scores, rows of queries by columns of keys. Plain C, no includes: the build embeds this file's
 * text into every generated kernel source, so that the kernels and the code calling them read one
 * definition. Scalars are float or double as the kernel's name says (_f32, _f64). */

#define ATTNLAB_EXPR_TILE_ABI 1

typedef struct attnlab_expr_tile {
  /* forward: the tile's scores in place (the scaled q.k with any position terms) -> score_mod's
   * result, or -inf where mask_mod removes it. backward: the raw scores, read. [rows][ld] */
  void* s;
  /* backward: d loss / d (score_mod's result), [rows][ld]; null in the forward */
  const void* g;
  /* backward: d loss / d (raw score), written, [rows][ld]; may be g itself */
  void* ds;
  long long ld;
  int rows, cols;
  /* the tile's batch row and head, the positions of its first query and first key, and the
   * batch row's unpadded lengths */
  int b, h, q0, k0, q_len, kv_len;
  /* 0: mask_mod is known true over the whole tile and is not evaluated */
  int apply_mask;
  /* the data of each tensor the expressions read, row-major, of the kernel's scalar */
  const void* const* tensors;
  /* backward: for each tensor, its gradient share (double, row-major) that the tile adds to, or
   * null where the tensor is not learned */
  double* const* grads;
} attnlab_expr_tile;
