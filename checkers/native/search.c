/* Breadth-first search over the generated step (codegen.py writes step.c, which includes this file
   after its own definitions).  The visited set holds 64-bit fingerprints and each state's parent's,
   as TLC's does and the Python search's `seen` does: a counterexample is rebuilt by following the
   parents back and replaying forward (engine.py).  Two levels of states are kept, no more, packed
   (packing.py): a state is unpacked into one 64-bit integer per leaf when it is expanded.

   With more than one worker (threads), the level's states are handed out in chunks; a worker computes
   a state's successors, their representatives and fingerprints on its own, and takes the one lock to
   admit them to the visited set, to add the new ones to the next level, and to stop the search.  The
   levels are the same sets whatever the workers; which parent a state records, and so which of the
   shortest counterexamples is found, may differ from run to run.  One worker searches as it always has
   (the same order, the same counts at a violation). */
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <pthread.h>
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

/* The fingerprint: the sum of each leaf's value times its own random constant (codegen.py's LEAF_KEY), mixed.
   Two states collide only if their differences, times the constants, sum to 0 mod 2^64: for states whose
   differences are not all divisible by 2^t, one chance in 2^(64-t) over the constants (a multilinear hash, as
   universal as the constants are random).  A multiply and an add a leaf, all independent: the eight-lane mix
   before it took three dependent operations a leaf and a fifth of the search (a profile of `ci`).  The mix after
   the sum spreads its bits over the table's index (the low bits of the sum are weak: a leaf's parity, in bit 0).
   static, so the search calls it directly (gs_fp, for engine.py, goes through the library's table) */
static inline uint64_t fp(const int64_t *x) {
  uint64_t a = 0, b = 0;
  int i = 0;
  for (; i + 2 <= NL; i += 2) { a += (uint64_t)x[i] * LEAF_KEY[i]; b += (uint64_t)x[i + 1] * LEAF_KEY[i + 1]; }
  if (i < NL) a += (uint64_t)x[i] * LEAF_KEY[i];
  uint64_t r = a + b;
  r ^= r >> 31; r *= 0xbf58476d1ce4e5b9ull; r ^= r >> 27; r *= 0x94d049bb133111ebull; r ^= r >> 31;
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
  int64_t orig[NL], img[SYM_NM];
  if (!sym_on || SYM_P < 2) return;
  const int64_t *from = x;                   /* the state as it was: x itself until x is changed */
  for (int p = 1; p < SYM_P; p++) {          /* each image made from the state as it was, against the least */
    int m = 0, less = 0;
    for (; m < SYM_NM; m++) {
      int j = SYM_MOVED[m];
      int64_t v = image(from, p, j);
      img[m] = v;
      if (v != x[j]) { less = v < x[j]; break; }
    }
    if (!less) continue;
    for (m++; m < SYM_NM; m++) img[m] = image(from, p, SYM_MOVED[m]);
    /* kept before x changes, if another image is still to be made (with two clients alike, never); only the
       leaves an image reads (symmetry.py) */
    if (from == x && p + 1 < SYM_P) {
      for (m = 0; m < SYM_NM; m++) orig[SYM_MOVED[m]] = x[SYM_MOVED[m]];
      from = orig;
    }
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
  int64_t y[NL];
  memcpy(y, x, sizeof y);
  canon(y);
  return fp(y);
}

/* The visited set: fingerprints alone, in a table at most three quarters full, read and written under the
   lock.  Each new state's parent goes to its level's file in the trail folder (its fingerprint and its parent's,
   16 bytes), as TLC keeps its trace on disk: a path is rebuilt by reading the levels back (gs_trail).  Memory
   is what ends a big search (the 3-client world ran out of it), so a state costs 11-21 bytes of it, not 32-48. */
static uint64_t *seen;
static size_t cap, used;
static size_t budget;       /* bytes the visited set and the two levels may take as they grow (0: no limit) */
static size_t level_bytes;  /* what the two levels take: their room, as allocated */
void gs_budget(size_t bytes) { budget = bytes; }

/* h's home slot: h's high half times the room, scaled down (no power of two needed, so the table can grow by half
   rather than double; h's high bits are its best mixed), or h modulo the room past 2^32 slots */
static inline size_t slot(uint64_t h) {
  return cap <= (size_t)1 << 32 ? (size_t)(((h >> 32) * (uint64_t)cap) >> 32) : (size_t)(h % cap);
}

/* half as much room again, or 0 if that would take more than the budget (the old table and the new, while the one
   is copied into the other, and the levels) or more than there is.  Half, not double: the 3-client world's 525 M
   states need a table of 700 M slots or more; doubling from 537 M took 4 GB and 8 GB side by side (with the levels,
   past 20 GB), growing by half takes 4 and 6 and ends with 6 */
static int grow(void) {
  size_t old = cap, want = old ? old + old / 2 : 1 << 8;
  if (budget && (old + want) * 8 + level_bytes > budget) return 0;
  uint64_t *was = seen, *now = calloc(want, 8);
  if (!now) return 0;
  seen = now; cap = want;
  for (size_t i = 0; i < old; i++)
    if (was[i]) {
      size_t j = slot(was[i]);
      while (seen[j]) j = j + 1 < cap ? j + 1 : 0;
      seen[j] = was[i];
    }
  free(was);
  return 1;
}

/* 1: h is new, 0: seen before, -1: no room to admit it */
static int admit(uint64_t h) {
  if (4 * (used + 1) > 3 * cap && !grow()) return -1;
  size_t j = slot(h);
  while (seen[j]) { if (seen[j] == h) return 0; j = j + 1 < cap ? j + 1 : 0; }
  seen[j] = h; used++;
  return 1;
}

/* a hint that h's slot is wanted soon: a state's successors' misses overlap instead of following one another
   (tcc has no such builtin: there it is nothing) */
static inline void soon(uint64_t h) {     /* outside the lock: a stale cap or table only wastes the hint */
#ifndef __TINYC__
  if (cap) __builtin_prefetch(&seen[slot(h)]);
#endif
}

static FILE *level_file(const char *trail, int d, const char *mode) {
  char path[4096];
  snprintf(path, sizeof path, "%s/level-%d", trail, d);
  return fopen(path, mode);
}

/* 1 and *parent if level d's file has `want`, 0 if not, -1 if it cannot be read */
static int find(const char *trail, int d, uint64_t want, uint64_t *parent) {
  FILE *f = level_file(trail, d, "rb");
  if (!f) return -1;
  static uint64_t e[2 * 4096];
  size_t k;
  int found = 0;
  while (!found && (k = fread(e, 16, 4096, f)) > 0)
    for (size_t i = 0; i < k; i++) if (e[2 * i] == want) { *parent = e[2 * i + 1]; found = 1; break; }
  fclose(f);
  return found;
}

/* chain[0] = h, then its parent, ... to the initial state's fingerprint: the chain's length, or -1 if the trail
   does not lead there within max.  h is looked for from level `deepest` down; its parent one level up, ... */
int gs_trail(const char *trail, uint64_t h, int deepest, uint64_t *chain, int max) {
  int d = deepest, n = 0;
  uint64_t parent = 0;
  while (d >= 0 && find(trail, d, h, &parent) != 1) d--;
  if (d < 0) return -1;
  for (;;) {
    if (n == max) return -1;
    chain[n++] = h;
    if (d == 0) return n;
    h = parent; d--;
    if (find(trail, d, h, &parent) != 1) return -1;
  }
}

#define MAX_WORKERS 64
static S *scr[MAX_WORKERS];                /* each worker's memo cache and path counts (scr[0]: gs_successors') */
static S *scratch(int w) { if (!scr[w]) scr[w] = calloc(1, sizeof(S)); return scr[w]; }

/* the successors of x (for rebuilding a path): their count; *bad as step() says */
int gs_successors(const int64_t *x, int64_t *out, int *bad, int *cut) {
  *bad = -1; *cut = 0;
  return step(x, out, bad, cut, scratch(0));
}

int gs_broken(const int64_t *x) { return broken(x, scratch(0)); }

/* how often each path was taken by the last search's expansions (and by gs_successors since), all workers' */
long *gs_hits(void) {
  static long total[NPATHS];
  memset(total, 0, sizeof total);
  for (int w = 0; w < MAX_WORKERS; w++)
    if (scr[w]) for (int p = 0; p < NPATHS; p++) total[p] += scr[w]->hits[p];
  return total;
}

/* a level's expansion, shared by its workers; everything but `front` under `mu` */
typedef struct {
  pthread_mutex_t mu;
  const uint64_t *front, *ffp;             /* this level: packed states and their fingerprints */
  size_t fn, claimed;
  uint64_t *next, *nfp;                    /* the next level, as it grows */
  size_t nn, ncap;
  int stop, full;                          /* the search ends (a result, or `full`: max_states reached) */
  FILE *log;                               /* the next level's trail: its states' fingerprints and parents' */
  long max_states, *levels, max_ends;
  int max_levels, workers;
  int64_t *ends;
  gs_result *r;
} Level;

typedef struct { Level *L; int w; } Worker;

/* the lock, taken only where there is another worker to take it from (one worker's search took 4% of its time
   locking and unlocking it, a profile of `ci`) */
static inline void hold(Level *L) { if (L->workers > 1) pthread_mutex_lock(&L->mu); }
static inline void release(Level *L) { if (L->workers > 1) pthread_mutex_unlock(&L->mu); }

#define CHUNK 32                           /* states a worker claims at a time */

/* set by gs_halt (engine.py, from the thread waiting for the search, when a signal's handler raised there):
   the workers stop at their next chunk */
static volatile int halt;
void gs_halt(void) { halt = 1; }

static void *expand(void *arg) {
  Level *L = ((Worker *)arg)->L;
  S *s = scratch(((Worker *)arg)->w);
  gs_result *r = L->r;
  int64_t x[NL], *out = malloc((size_t)MAX_SUCC * NL * 8);
  uint64_t *h = malloc(MAX_SUCC * 8), *mine = malloc(MAX_SUCC * PW * 8), *mfp = malloc(MAX_SUCC * 8);
  unsigned char *fresh = malloc(MAX_SUCC);
  for (;;) {
    hold(L);
    size_t i0 = L->claimed, i1 = i0 + CHUNK < L->fn ? i0 + CHUNK : L->fn;
    L->claimed = i1;
    if (halt && !L->stop) { L->stop = 1; r->violation = -6; r->complete = 0; }
    int stop = L->stop;
    release(L);
    if (stop || i0 >= i1) break;
    for (size_t i = i0; i < i1; i++) {
      unpack(L->front + i * PW, x);
      uint64_t hx = L->ffp[i];
      int bad = -1, cut = 0;
      int k = step(x, out, &bad, &cut, s);
      if (k > 0 && bad < 0)
        for (int j = 0; j < k; j++) { canon(out + (size_t)j * NL); h[j] = fp(out + (size_t)j * NL); soon(h[j]); }
      hold(L);
      if (L->stop) { release(L); goto out; }
      long first = r->states;
      int full = 0;
      if (k < 0) { r->violation = -2; L->stop = 1; }                /* more successors than MAX_SUCC */
      else {
        r->transitions += k;
        if (bad >= 0) { r->violation = bad; r->bad_step_from = hx; L->stop = 1; }
        else if (k == 0 && !cut) {
          if (r->ends < L->max_ends) memcpy(L->ends + r->ends * NL, x, NL * 8);
          r->ends++;
        }
        else for (int j = 0; j < k; j++) {
          int a = admit(h[j]);
          if (a < 0) {                 /* the rest of this state's successors not admitted: none of them */
            for (int i = 0; i < j; i++) r->states -= fresh[i];
            L->stop = L->full = full = 1; r->complete = 0; r->violation = -4;
            break;
          }
          if (a) {
            uint64_t e[2] = {h[j], hx};
            if (fwrite(e, 16, 1, L->log) != 1) {          /* checked again when the file is closed */
              L->stop = full = 1; r->complete = 0; r->violation = -5; r->value = errno;
              break;
            }
          }
          r->states += fresh[j] = a;
        }
        if (r->depth + 1 < L->max_levels) L->levels[r->depth + 1] += r->states - first;
      }
      release(L);
      if (k < 0 || bad >= 0 || full) goto out;           /* this worker stopped the search */
      /* the new states, in order: checked, counted for their orbits, packed for the next level */
      long unreduced = 0, made = 0, n = 0;
      int v = -1, leaf = -1;
      for (int j = 0; j < k && bad < 0; j++) {
        if (!fresh[j]) continue;
        int64_t *y = out + (size_t)j * NL;
        unreduced += orbit(y);
        if ((v = broken(y, s)) >= 0) { n = j; break; }
        if ((leaf = pack(y, mine + made * PW)) >= 0) { n = j; break; }
        mfp[made++] = h[j];
      }
      hold(L);
      if (L->stop) { release(L); goto out; }
      r->unreduced += unreduced;
      if (v >= 0 || leaf >= 0) {
        /* counted up to this state, as one worker that stops at it counts: the new states after it are not */
        long after = 0;
        for (int j = n + 1; j < k; j++) after += fresh[j];
        r->states -= after;
        if (r->depth + 1 < L->max_levels) L->levels[r->depth + 1] -= after;
        if (v >= 0) { r->violation = v; r->at = h[n]; r->parent = hx; r->depth++; }
        else { r->violation = -3; r->leaf = leaf; r->value = out[(size_t)n * NL + leaf]; }
        L->stop = 1;
      } else {
        if (L->nn + made > L->ncap) {
          size_t want = L->ncap;
          while (L->nn + made > want) want *= 2;
          size_t more = (want - L->ncap) * (PW + 1) * 8;
          uint64_t *nx = 0, *nf = 0;
          if (!budget || cap * 8 + level_bytes + more <= budget) {
            if ((nx = realloc(L->next, want * PW * 8))) L->next = nx;
            if (nx && (nf = realloc(L->nfp, want * 8))) L->nfp = nf;
          }
          if (!nx || !nf) {            /* this state's new states are counted, not kept: the search ends here */
            L->stop = L->full = 1; r->complete = 0; r->violation = -4;
            release(L);
            goto out;
          }
          level_bytes += more; L->ncap = want;
        }
        memcpy(L->next + L->nn * PW, mine, made * PW * 8);
        memcpy(L->nfp + L->nn, mfp, made * 8);
        L->nn += made;
        if (r->states >= L->max_states) { L->stop = L->full = 1; r->complete = 0; }
      }
      stop = L->stop;
      release(L);
      if (stop) goto out;
    }
  }
out:
  free(out); free(h); free(mine); free(mfp); free(fresh);
  return 0;
}

/* levels[d]: the states first reached at depth d (up to max_levels); ends: up to max_ends states
   without successors and with no step a bound cut, for engine.py to judge; progress (if given) is
   called after each level with its depth, the states so far and the level's; trail: a folder for the levels'
   files of parents (empty, or the files of an earlier search are overwritten) */
typedef void (*gs_progress)(int depth, long states, long level);

int gs_search(const int64_t *init, long max_states, long *levels, int max_levels, int64_t *ends, long max_ends,
              gs_result *r, int workers, gs_progress progress, const char *trail) {
  Level L = {.max_states = max_states, .levels = levels, .max_levels = max_levels, .ends = ends,
             .max_ends = max_ends, .r = r, .ncap = 16};
  pthread_mutex_init(&L.mu, 0);
  if (workers < 1) workers = 1;
  if (workers > MAX_WORKERS) workers = MAX_WORKERS;
  L.workers = workers;
  uint64_t *front = malloc(PW * 8), *ffp = malloc(8);
  L.next = malloc(L.ncap * PW * 8); L.nfp = malloc(L.ncap * 8);
  level_bytes = (1 + L.ncap) * (PW + 1) * 8;
  memset(r, 0, sizeof *r); r->violation = -1; r->complete = 1;
  halt = 0;
  free(seen); seen = 0; cap = used = 0;
  for (int w = 0; w < workers; w++) memset(scratch(w)->hits, 0, sizeof scratch(w)->hits);
  for (int w = workers; w < MAX_WORKERS; w++) if (scr[w]) memset(scr[w]->hits, 0, sizeof scr[w]->hits);
  int64_t x[NL];
  memcpy(x, init, NL * 8);
  canon(x);
  uint64_t h0 = fp(x);
  ffp[0] = h0;
  if (admit(h0) < 0) { r->violation = -4; r->complete = 0; goto done; }
  uint64_t root[2] = {h0, 0};
  if (!(L.log = level_file(trail, 0, "wb")) || fwrite(root, 16, 1, L.log) != 1 || fclose(L.log)) {
    r->violation = -5; r->value = errno; r->complete = 0; goto done;
  }
  r->states = 1; r->unreduced = orbit(x); levels[0] = 1;
  if ((r->violation = broken(x, scratch(0))) >= 0) { r->at = h0; goto done; }
  if ((r->leaf = pack(x, front)) >= 0) { r->violation = -3; r->value = x[r->leaf]; goto done; }
  size_t fn = 1, fcap = 1;
  Worker ws[MAX_WORKERS];
  pthread_t threads[MAX_WORKERS];
  for (;;) {
    L.front = front; L.ffp = ffp; L.fn = fn; L.claimed = 0; L.nn = 0;
    if (!(L.log = level_file(trail, r->depth + 1, "wb"))) {
      r->violation = -5; r->value = errno; r->complete = 0; break;
    }
    setvbuf(L.log, 0, _IOFBF, 1 << 20);
    for (int w = 0; w < workers; w++) ws[w] = (Worker){&L, w};
    for (int w = 1; w < workers; w++) pthread_create(&threads[w], 0, expand, &ws[w]);
    expand(&ws[0]);                        /* this thread is worker 0 */
    for (int w = 1; w < workers; w++) pthread_join(threads[w], 0);
    if (fclose(L.log) && r->violation != -5) {      /* what the buffer held could not be written */
      r->violation = -5; r->value = errno; r->complete = 0; break;
    }
    if (L.stop) { if (L.full && L.nn) r->depth++; break; }
    if (!L.nn) break;
    /* the next level becomes this one; this one's room, the next's */
    uint64_t *t = front; front = L.next; L.next = t;
    uint64_t *tf = ffp; ffp = L.nfp; L.nfp = tf;
    size_t tc = fcap; fcap = L.ncap; L.ncap = tc; fn = L.nn;
    r->depth++;
    if (progress) progress(r->depth, r->states, (long)fn);
  }
done:
  free(front); free(ffp); free(L.next); free(L.nfp);
  pthread_mutex_destroy(&L.mu);
  return 0;
}
