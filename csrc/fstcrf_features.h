/*
 * fstcrf_features.h -- factored feature scores and feature expectations.
 *
 * A model feature is an observation predicate p (a column of the sparse
 * token-by-predicate matrix X) paired with an output predicate q on the
 * state at the token.  Outputs are numbered
 *
 *     q = s        0 <= s < S    "the state at the token is s"
 *     q = S + c    0 <= c < L    "the label of the state at the token is c"
 *
 * Label outputs give Sha & Pereira's chunk-tag features of second-order
 * models (the state is a tag pair, the label its current tag); with L = 0
 * there are none.  The dictionary lists the features of each predicate:
 * feature f = ptr[p] .. ptr[p+1]-1 pairs p with output[f] and has weight
 * theta[f].  Transition features are not handled here: the dynamic programs
 * of fstcrf_kernel.h score edges directly.
 *
 * The score of state s at token t is then
 *
 *     emit[t, s] = sum over entries j of row t of X:  values[j] *
 *                  sum over features f of predicate indices[j] with
 *                  output[f] == s or output[f] == S + state_label[s]:  theta[f]
 *
 * Conventions are those of fstcrf_kernel.h: C-contiguous arrays with shapes
 * in brackets, no globals, no allocation, every buffer owned by the caller,
 * so calls that write disjoint outputs may run in parallel threads.  The
 * caller validates the dictionary once (ptr non-decreasing from 0, outputs
 * in [0, S + L), state labels in [0, L)); each call checks the token block
 * (row pointers non-decreasing, predicates in [0, P), states in [0, S)) and
 * returns FC_BAD_ARGUMENT, before touching any output, if it is malformed,
 * else FC_OK.
 */
#ifndef FSTCRF_FEATURES_H
#define FSTCRF_FEATURES_H

#include <stdint.h>

#include "fstcrf_kernel.h"

/* The feature dictionary: features grouped by predicate. */
typedef struct {
    int32_t num_states;          /* S */
    int32_t num_labels;          /* L, the label outputs; 0 if there are none */
    const int32_t *state_label;  /* [S] label of each state (read only when L > 0) */
    int32_t num_predicates;      /* P */
    const int64_t *ptr;          /* [P+1] features of predicate p are ptr[p] .. ptr[p+1]-1 */
    const int32_t *output;       /* [F] output of feature f, in [0, S + L) */
    int32_t outputs_ascending;   /* 1 if the outputs of every predicate ascend (see
                                    ff_outputs_ascending): a predicate with S + L
                                    features then has outputs 0 .. S+L-1 in order, one
                                    whose last L start at output S has the label
                                    outputs S .. S+L-1 there, and those rows are read
                                    as contiguous vectors */
} ff_dictionary;

/* A block of n consecutive tokens: rows of X in compressed sparse row form.
 * Row t holds entries indptr[t] .. indptr[t+1]-1 of indices and values, so a
 * block of a larger matrix passes a slice of its indptr and the full arrays. */
typedef struct {
    int64_t num_tokens;          /* n */
    const int64_t *indptr;       /* [n+1] first entry of each row */
    const int32_t *indices;      /* [nnz] predicate of each entry, in [0, P) */
    const double *values;        /* [nnz] value of each entry, or NULL when every value is 1
                                    (binary predicates) */
} ff_tokens;

/* Length of the scratch buffer `work` the functions below need: S + L. */
int64_t ff_work_doubles(const ff_dictionary *d);

/* 1 if output[ptr[p]] < ... < output[ptr[p+1]-1] for every predicate p, else 0
 * (what the caller stores in d->outputs_ascending; reads ptr and output only). */
int32_t ff_outputs_ascending(const ff_dictionary *d);

/* State scores of a block of tokens.
 *   theta [F]     feature weights
 *   scale         every score is multiplied by it (1 for plain weights)
 *   emit  [n, S]  OVERWRITTEN: scale * (score of state s at token t, see above)
 *   work  [S + L] scratch */
int ff_emissions(const ff_dictionary *d, const ff_tokens *x, const double *theta,
                 double scale, double *emit, double *work);

/* Expected feature counts of a block of tokens under state marginals.
 *   marg  [n, S]  p(state at token t = s), or any per-token state weights
 *   grad  [F]     ADDED TO: scale * sum_t sum_j values[j] * m_t[output[f]]
 *                 over the features f of predicate indices[j], where
 *                 m_t[s] = marg[t, s] and m_t[S + c] = sum of marg[t, s]
 *                 over the states s with label c
 *   work  [S + L] scratch */
int ff_accumulate(const ff_dictionary *d, const ff_tokens *x, const double *marg,
                  double scale, double *grad, double *work);

/* ff_accumulate into a compact layout of the counts: predicate p's features
 * are at[p] .. at[p] + ptr[p+1] - ptr[p] - 1 of grad (at int64 [P], -1 for a
 * predicate the block does not use; NULL: at = ptr, grad [F]).  A thread that
 * sees a part of the predicates keeps its counts in a buffer of their features
 * only.  at[p] == FF_DIRECT sends predicate p's counts to direct [F] at ptr[p]
 * instead: a predicate no other thread writes needs no place in that buffer.
 * FC_BAD_ARGUMENT, before writing, if a token uses a predicate with at[p] < 0
 * (or FF_DIRECT while direct is NULL); the caller sizes grad to its layout. */
#define FF_DIRECT -2
int ff_accumulate_at(const ff_dictionary *d, const ff_tokens *x, const double *marg,
                     double scale, const int64_t *at, double *grad, double *direct, double *work);

/* grad [F] += counts laid out by at [P] (see ff_accumulate_at): predicate p's
 * rows where at[p] >= 0 (not the FF_DIRECT ones), each feature's count added once. */
void ff_add_rows_at(const ff_dictionary *d, const int64_t *at, const double *counts, double *grad);

/* Feature counts of state paths: the case of ff_accumulate where each marg row
 * is an indicator, without materialising it.
 *   plus  [n]  a state at each token
 *   minus [n]  another state at each token, or NULL
 *   grad  [F]  ADDED TO: scale * (counts along plus - counts along minus);
 *              tokens where plus and minus agree are skipped */
int ff_add_paths(const ff_dictionary *d, const ff_tokens *x, const int32_t *plus,
                 const int32_t *minus, double scale, double *grad);

/* Rows of (column, value) entries made canonical: each row's columns ascending, the
 * values of a repeated column added in their order, zero values dropped.
 *   starts   [N+1]  row t is entries starts[t] .. starts[t+1]-1 of columns and values
 *   columns  [M]    in [0, width)
 *   values   [M]
 *   indptr   [N+1]  OVERWRITTEN: row t of the result is indices and data[indptr[t] ..
 *                   indptr[t+1]-1]
 *   indices  [M]    OVERWRITTEN in its first indptr[N] entries
 *   data     [M]    OVERWRITTEN likewise
 *   ones     [1]    OVERWRITTEN: 1 if every value kept is 1, else 0
 * Returns FC_BAD_ARGUMENT, before writing, if the starts do not rise from 0 to M or a
 * column is out of range, else FC_OK. */
int ff_canonical_rows(int64_t num_rows, const int64_t *starts, const int64_t *columns,
                      const double *values, int64_t width, int64_t *indptr, int32_t *indices,
                      double *data, int32_t *ones);

/* -- predicate rows of value lists ------------------------------------------
 * A template whose items give each token a list of values (all prefixes of a
 * word, its character n-grams, a bag of words, ...; a single value is a list
 * of one) has, at each token and for each line, the predicates of the cross
 * product of its items' lists.  The key of a predicate chains the hashes of
 * its values as csrc/fstcrf_hashing.h describes for single values:
 *
 *     key = seeds[k];  key = fh_mix(key ^ value hash)   for each item, in order
 *
 * and the known keys are looked up in a table of fstcrf_hashing.h. */

/* The known predicates of N tokens, in compressed sparse row form.
 *   value_ptr    [J, N+1]  item j's values at token t are value_hashes[value_ptr[j, t] ..
 *                          value_ptr[j, t+1]-1]
 *   value_hashes [V]       the hashes of the values
 *   seeds        [T]       the key seed of each line
 *   item_ptr     [T+1]     line k crosses items items[item_ptr[k] .. item_ptr[k+1]-1]
 *                          (at most FF_MAX_ITEMS; none: the bias, one key per token)
 *   items        [I]       item indices in [0, J)
 *   slots        [2 * capacity]  the table of known keys (fstcrf_hashing.h)
 *   scratch_keys, scratch_columns [scratch_size]  OVERWRITTEN: scratch; scratch_size
 *                          at least the number of keys of any one token
 *   num_grouped            the first num_grouped lines give every token of a group the
 *                          same keys (they read the token's own value only): they are
 *                          looked up at the first token of each group and copied after
 *                          (0: no groups; then group, memo_ptr, memo, memo_count unread)
 *   group        [N]       the group of each token, in [0, G) (G = num_groups)
 *   memo_ptr     [G+1]     group g keeps its known columns in memo[memo_ptr[g] ..
 *                          memo_ptr[g+1]-1]: room for the keys of those lines at its tokens
 *   memo, memo_count [memo_ptr[G]], [G]  OVERWRITTEN: scratch
 *   indptr       [N+1]     OVERWRITTEN: row pointers
 *   indices      [max_entries]  OVERWRITTEN in its first indptr[N] entries: the known
 *                          columns of row t, ascending, at indptr[t] .. indptr[t+1]-1
 * Returns FC_BAD_ARGUMENT, before writing, if item_ptr, items, value_ptr, group or
 * memo_ptr are out of range, and FC_BAD_ARGUMENT (indptr and indices unspecified) if a
 * token has more keys than scratch_size, a group more than its room, or the rows more
 * known entries than max_entries; else FC_OK. */
#define FF_MAX_ITEMS 64
int ff_list_rows(int64_t num_tokens, int32_t num_items, const int64_t *value_ptr,
                 int64_t num_values, const uint64_t *value_hashes, int32_t num_templates,
                 const uint64_t *seeds, const int32_t *item_ptr, const int32_t *items,
                 int64_t capacity, const uint64_t *slots, int64_t scratch_size,
                 uint64_t *scratch_keys, int64_t *scratch_columns, int32_t num_grouped,
                 int64_t num_groups, const int64_t *group, const int64_t *memo_ptr, int32_t *memo,
                 int64_t *memo_count, int64_t *indptr, int64_t max_entries, int32_t *indices);

/* The known columns of the grouped lines of ff_list_rows_kept, kept per group across
   calls: group g's are pool[start[g] .. start[g] + count[g] - 1], ascending, or not kept
   when start[g] is -1; `used` entries of the pool hold them. */
typedef struct {
    int64_t num_groups;               /* G */
    int64_t *start;                   /* [G] */
    int32_t *count;                   /* [G] */
    int64_t pool_size;
    int32_t *pool;                    /* [pool_size] */
    int64_t used;
} ff_kept_columns;

/* ff_list_rows whose first num_grouped (>= 1) lines read the token's own value of one
 * column only, group[t] (in [0, G)) numbering that value for good: their known columns
 * are taken from `kept` when it holds the group's, else looked up and added to it
 * while the pool has room (the same rows, bit for bit). */
int ff_list_rows_kept(int64_t num_tokens, int32_t num_items, const int64_t *value_ptr, int64_t num_values,
                      const uint64_t *value_hashes, int32_t num_templates, const uint64_t *seeds,
                      const int32_t *item_ptr, const int32_t *items, int64_t capacity, const uint64_t *slots,
                      int64_t scratch_size, uint64_t *scratch_keys, int64_t *scratch_columns,
                      int32_t num_grouped, const int64_t *group, ff_kept_columns *kept, int64_t *indptr,
                      int64_t max_entries, int32_t *indices);

/* How many keys lines first .. last-1 of ff_list_rows give tokens: sizes[m] is the sum
 * over the lines of the product of their items' list lengths at token at[m] (at [M],
 * or every token, M = N, when at is NULL), saturating at FF_MANY_KEYS.
 *   value_ptr, item_ptr, items  as ff_list_rows takes them
 *   sizes [M]  OVERWRITTEN
 * Returns FC_BAD_ARGUMENT, before writing, if the lines, items, tokens or value_ptr
 * are out of range, else FC_OK. */
#define FF_MANY_KEYS ((int64_t)1 << 40)
int ff_line_sizes(int64_t num_tokens, int32_t num_items, const int64_t *value_ptr, int32_t first,
                  int32_t last, const int32_t *item_ptr, const int32_t *items, int64_t num_at,
                  const int64_t *at, int64_t *sizes);

#endif
