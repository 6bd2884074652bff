/* Breadth-first search over the generated step (codegen.py writes step.c, which includes this file
   after its own definitions).  The visited set holds 64-bit fingerprints and each state's parent's,
   as TLC's does and the Python search's `seen` does: a counterexample is rebuilt by following the
   parents back and replaying forward (engine.py).  Two levels of states are kept, no more, packed
   (packing.py): a state is unpacked into one 64-bit integer per leaf when it is expanded. */
#include <stdlib.h>
#include "symmetry.h"            /* symmetry.py's tables of the renamings of clients */
#include "packing.h"             /* packing.py's pack and unpack */

typedef struct {
  long states, transitions;
  int depth, complete;
  int violation;                 /* an invariant's index, or -1 */
  uint64_t at, parent;           /* the violating state's fingerprint (0 for a step's) and its parent's */
  uint64_t bad_step_from;        /* a step breaking an invariant on its way: the state it leaves */
  long ends;                     /* states without successors (engine.py asks which are deadlocks) */
  long unreduced;                /* the states they stand for (symmetry: each state's orbit) */
  int leaf;                      /* violation -3: a leaf outside the range its packing holds, and its value */
  int64_t value;
} gs_result;

/* static, so the search calls it directly (gs_fp, for engine.py, goes through the library's table) */
static inline uint64_t fp(const int64_t *x) {
  /* eight independent lanes: the words are mixed in parallel, not one multiply chain of NL links */
  uint64_t h[8] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull, 0x27D4EB2F165667C5ull,
                   0x85EBCA77C2B2AE63ull, 0xFF51AFD7ED558CCDull, 0xC4CEB9FE1A85EC53ull, 0xBF58476D1CE4E5B9ull};
  int i = 0;
  for (; i + 8 <= NL; i += 8)
    for (int k = 0; k < 8; k++) { h[k] ^= (uint64_t)x[i + k]; h[k] *= 0xff51afd7ed558ccdull; h[k] ^= h[k] >> 29; }
  for (int k = 0; i < NL; i++, k++) { h[k] ^= (uint64_t)x[i]; h[k] *= 0xff51afd7ed558ccdull; h[k] ^= h[k] >> 29; }
  uint64_t r = h[0];
  for (int k = 1; k < 8; k++) { r ^= h[k] * (0x9E3779B97F4A7C15ull + 2 * (uint64_t)k); r = (r << 23) | (r >> 41); }
  r ^= r >> 31; r *= 0xbf58476d1ce4e5b9ull; r ^= r >> 27;
  return r ? r : 1;              /* 0 marks an empty slot */
}

uint64_t gs_fp(const int64_t *x) { return fp(x); }

/* Symmetry (on unless gs_symmetry(0)): x replaced by the least of its images under the renamings.  Only
   the leaves some renaming changes are compared (SYM_MOVED, in order): the others are alike in every image. */
static int sym_on = 1;
void gs_symmetry(int on) { sym_on = on; }

static inline int64_t image(const int64_t *x, int p, int j) {
  int64_t v = x[SYM_SRC[p][j]];
  return SYM_CLIENT[j] && v != SYM_NONE ? SYM_NEW[p][v] : v;
}

static void canon(int64_t *x) {
  static int64_t orig[NL], img[SYM_NM];
  if (!sym_on || SYM_P < 2) return;
  memcpy(orig, x, sizeof orig);
  for (int p = 1; p < SYM_P; p++) {          /* each image made from the state as it was, against the least */
    int m = 0, less = 0;
    for (; m < SYM_NM; m++) {
      int j = SYM_MOVED[m];
      int64_t v = image(orig, p, j);
      img[m] = v;
      if (v != x[j]) { less = v < x[j]; break; }
    }
    if (!less) continue;
    for (m++; m < SYM_NM; m++) img[m] = image(orig, p, SYM_MOVED[m]);
    for (m = 0; m < SYM_NM; m++) x[SYM_MOVED[m]] = img[m];
  }
}

/* the states x stands for: the renamings over those that leave it as it is */
static long orbit(const int64_t *x) {
  if (!sym_on) return 1;
  int fixed = 0;
  for (int p = 0; p < SYM_P; p++) {
    int m = 0;
    while (m < SYM_NM && image(x, p, SYM_MOVED[m]) == x[SYM_MOVED[m]]) m++;
    fixed += m == SYM_NM;
  }
  return SYM_P / fixed;
}

/* the fingerprint of x's representative (x itself without symmetry) */
uint64_t gs_key(const int64_t *x) {
  static int64_t y[NL];
  memcpy(y, x, sizeof y);
  canon(y);
  return fp(y);
}

static uint64_t *keys, *parents;
static size_t cap, used;

static void grow(void) {
  size_t old = cap; uint64_t *ok = keys, *op = parents;
  cap = old ? old * 2 : 1 << 16;
  keys = calloc(cap, 8); parents = calloc(cap, 8);
  for (size_t i = 0; i < old; i++)
    if (ok[i]) {
      size_t j = ok[i] & (cap - 1);
      while (keys[j]) j = (j + 1) & (cap - 1);
      keys[j] = ok[i]; parents[j] = op[i];
    }
  free(ok); free(op);
}

static int admit(uint64_t h, uint64_t parent) {
  if (2 * (used + 1) > cap) grow();
  size_t j = h & (cap - 1);
  while (keys[j]) { if (keys[j] == h) return 0; j = (j + 1) & (cap - 1); }
  keys[j] = h; parents[j] = parent; used++;
  return 1;
}

uint64_t gs_parent(uint64_t h) {
  size_t j = h & (cap - 1);
  while (keys[j]) { if (keys[j] == h) return parents[j]; j = (j + 1) & (cap - 1); }
  return 0;
}

static S *scratch(void) { static S *s; if (!s) s = calloc(1, sizeof(S)); return s; }

/* the successors of x (for rebuilding a path): their count; *bad as step() says */
int gs_successors(const int64_t *x, int64_t *out, int *bad, int *cut) {
  *bad = -1; *cut = 0;
  return step(x, out, bad, cut, scratch());
}

int gs_broken(const int64_t *x) { return broken(x, scratch()); }

/* how often each path was taken by the last search's expansions (and by gs_successors since) */
long *gs_hits(void) { return hits; }

/* levels[d]: the states first reached at depth d (up to max_levels); ends: up to max_ends states
   without successors and with no step a bound cut, for engine.py to judge */
int gs_search(const int64_t *init, long max_states, long *levels, int max_levels, int64_t *ends, long max_ends,
              gs_result *r) {
  S *s = scratch();
  size_t fn = 1, fcap = 1024, nn, ncap = 1024;
  uint64_t *front = malloc(fcap * PW * 8), *next = malloc(ncap * PW * 8);
  int64_t *out = malloc((size_t)MAX_SUCC * NL * 8), x[NL];
  uint64_t *ffp = malloc(fcap * 8), *nfp = malloc(ncap * 8);     /* the levels' fingerprints, made once */
  memset(r, 0, sizeof *r); r->violation = -1; r->complete = 1;
  free(keys); free(parents); keys = parents = 0; cap = used = 0;
  memset(hits, 0, sizeof hits);
  memcpy(x, init, NL * 8);
  canon(x);
  uint64_t h0 = fp(x);
  ffp[0] = h0;
  admit(h0, 0); r->states = 1; r->unreduced = orbit(x); levels[0] = 1;
  if ((r->violation = broken(x, s)) >= 0) { r->at = h0; goto done; }
  if ((r->leaf = pack(x, front)) >= 0) { r->violation = -3; r->value = x[r->leaf]; goto done; }
  for (;;) {
    nn = 0;
    for (size_t i = 0; i < fn; i++) {
      unpack(front + i * PW, x);
      int bad = -1, cut = 0;
      int k = step(x, out, &bad, &cut, s);
      uint64_t hx = ffp[i];
      if (k < 0) { r->violation = -2; goto done; }          /* more successors than MAX_SUCC */
      r->transitions += k;
      if (bad >= 0) { r->violation = bad; r->bad_step_from = hx; goto done; }
      if (k == 0 && !cut) {
        if (r->ends < max_ends) memcpy(ends + r->ends * NL, x, NL * 8);
        r->ends++;
      }
      for (int j = 0; j < k; j++) {
        int64_t *y = out + (size_t)j * NL;
        canon(y);
        uint64_t hy = fp(y);
        if (!admit(hy, hx)) continue;
        r->states++; r->unreduced += orbit(y);
        if (r->depth + 1 < max_levels) levels[r->depth + 1]++;
        int v = broken(y, s);
        if (v >= 0) { r->violation = v; r->at = hy; r->parent = hx; r->depth++; goto done; }
        if (nn == ncap) { ncap *= 2; next = realloc(next, ncap * PW * 8); nfp = realloc(nfp, ncap * 8); }
        if ((r->leaf = pack(y, next + nn * PW)) >= 0) { r->violation = -3; r->value = y[r->leaf]; goto done; }
        nfp[nn] = hy; nn++;
      }
      if (r->states >= max_states) { r->complete = 0; if (nn) r->depth++; goto done; }
    }
    if (!nn) break;
    uint64_t *t = front; front = next; next = t;
    uint64_t *tf = ffp; ffp = nfp; nfp = tf;
    size_t tc = fcap; fcap = ncap; ncap = tc; fn = nn;
    r->depth++;
  }
done:
  free(front); free(next); free(out); free(ffp); free(nfp);
  return 0;
}
