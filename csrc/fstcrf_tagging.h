/*
 * fstcrf_tagging.h -- a batch of sentences tagged in one call: the predicate rows of
 * its tokens (from the hashes of their column values, or given), the state scores,
 * and the best path of each sentence.
 *
 * Tagging a sentence runs the steps fstcrf_hashing.h, fstcrf_features.h and
 * fstcrf_kernel.h each hold:
 *
 *     value hashes [G, N] -> fh_window_hashes     -> observation hashes [J, N]
 *                         -> fh_predicate_rows    -> rows (CSR)
 *  or store rows [C, N]   -> fv_item_values       -> item value lists [J, N]
 *                         -> ff_list_rows         -> rows (CSR)          (ft_tag_lists)
 *  or token entries [M]   -> ff_canonical_rows    -> rows (CSR)
 *                         -> ff_emissions         -> emit [N, S]
 *                         -> (a restriction's states: emit [N, S'] gathered)
 *                         -> fc_viterbi           -> path [N], score [B]
 *
 * ft_tag runs them on buffers made once per model and thread, so that a call on
 * one sentence costs the steps' own work and one crossing from Python.  The
 * results are those of the steps run one by one, bit for bit: on the model's own
 * graph the emissions and the search are ft_best_paths (fstcrf_train.h).
 *
 * Conventions are those of fstcrf_kernel.h: C-contiguous arrays with shapes in
 * brackets, no globals, no allocation, every buffer owned by the caller; calls
 * on different ft_tag_buffers may run in parallel threads.
 */
#ifndef FSTCRF_TAGGING_H
#define FSTCRF_TAGGING_H

#include <stdint.h>

#include "fstcrf_features.h"
#include "fstcrf_kernel.h"

/* What tagging needs of a model, made once per model. */
typedef struct {
    /* the single values the lines read (fh_window_hashes): observation j reads source
       row source[j] at offset[j]; 0 observations and lines when rows are given */
    int32_t num_sources;              /* G */
    int32_t num_observations;         /* J */
    const int32_t *source;            /* [J] in [0, G) */
    const int64_t *offset;            /* [J] */
    uint64_t salt;
    /* the lines (fh_predicate_rows) and the table of known keys */
    int32_t num_lines;                /* T */
    const uint64_t *seeds;            /* [T] */
    const int32_t *item_ptr;          /* [T+1] */
    const int32_t *items;             /* [I] in [0, J) */
    int64_t capacity;
    const uint64_t *slots;            /* [2 * capacity] */
    /* the state scores (S model states) and the search */
    const ff_dictionary *dictionary;
    const double *theta;              /* [F] feature weights */
    const fc_graph *graph;            /* S' states searched */
    const int32_t *state_map;         /* [S'] the model state of each state searched (a
                                         restriction of the model's topology), or NULL:
                                         the graph is the model's */
} ft_tagger;

/* A thread's buffers for batches of up to max_tokens tokens (and max_entries entries,
   for ft_tag_entries). */
typedef struct {
    int64_t max_tokens;               /* N_max */
    int64_t max_entries;              /* M_max */
    uint64_t *window;                 /* [J * N_max] */
    int32_t *line_scratch;            /* [FH_BLOCK * T] */
    int64_t *indptr;                  /* [N_max + 1] */
    int32_t *indices;                 /* [max(N_max * T, M_max)] */
    double *values;                   /* [M_max] */
    double *emit;                     /* [N_max * S] */
    double *search_emit;              /* [N_max * S'] (read only with a state map) */
    double *work;                     /* [ff_work_doubles(dictionary)] */
    fc_workspace *workspace;          /* fc_viterbi's, for the longest sentence */
} ft_tag_buffers;

/* The best state path of each sentence of a batch of N tokens.
 *   scores             the transition scores of the graph searched (a call's own, so
 *                      that threads sharing a tagger may search under others)
 *   offsets  [B+1]     sentence i is tokens offsets[i] .. offsets[i+1]-1, from 0 to N, or
 *                      NULL when B is 1 (the sentence is the N tokens)
 *   sources  [G, N]    the hash of each token's value in each source (the rows are then
 *                      looked up), or NULL when rows are given
 *   rows               the N tokens' predicate rows, or NULL (sources given)
 *   token_class [N]    the class of each token (see fc_batch), or NULL
 *   path     [N]       OVERWRITTEN: the best model state at each token
 *   score    [B]       OVERWRITTEN: the best path's score
 * Returns FC_BAD_ARGUMENT if N passes max_tokens or exactly one of sources and rows is
 * not given, else the status of the first step that fails (FC_INFEASIBLE: a sentence
 * has no path). */
int ft_tag(const ft_tagger *t, const fc_scores *scores, ft_tag_buffers *b, int64_t num_tokens, int32_t num_sequences,
           const int64_t *offsets, const uint64_t *sources, const ff_tokens *rows,
           const int32_t *token_class, int32_t *path, double *score);

/* ft_tag of a batch given as the entries of its tokens, unsorted (what fstcrf._attributes
 * reads of token dicts): token n's entries are columns / values[starts[n] .. starts[n+1]-1]
 * (starts [N+1] from 0, columns [M] in [0, P), values [M]).  The rows are the entries made
 * canonical by ff_canonical_rows, as the batch path makes them (the values left out when
 * all are 1), in the buffers, then tagged by ft_tag.  Returns FC_BAD_ARGUMENT if M passes
 * max_entries or the entries are out of range, else ft_tag's status. */
int ft_tag_entries(const ft_tagger *t, const fc_scores *scores, ft_tag_buffers *b, int64_t num_tokens,
                   int32_t num_sequences, const int64_t *offsets, const int64_t *starts, const int64_t *columns,
                   const double *values, const int32_t *token_class, int32_t *path, double *score);

/* The tables of a value store as fv_item_values reads them (fstcrf_values.h): rows
   0 .. num_rows-1 of each filled, row stride `stride`. */
typedef struct {
    int64_t num_rows;
    int64_t stride;
    int32_t num_singles;
    const uint64_t *single;           /* [Ts, stride] */
    int32_t num_lists;
    const int64_t *list_span;         /* [Tl, stride, 2] */
    int64_t num_list_hashes;
    const uint64_t *list_hashes;      /* [H] */
    int32_t num_texts;
    const int64_t *text_span;         /* [Tx, stride, 2] */
    int64_t num_text_bytes;
    const uint8_t *text_bytes;        /* [X] */
} ft_value_store;

/* A thread's buffers for ft_tag_lists: room for batches of up to max_tokens tokens and
   max_items items, max_hashes item values, max_keys keys of one token and max_entries
   known predicates of the batch. */
typedef struct {
    int64_t max_tokens;               /* N_max */
    int32_t max_items;                /* J_max */
    int64_t *value_ptr;               /* [J_max * (N_max + 1)] */
    int64_t *sizes;                   /* [N_max] */
    int64_t max_hashes;
    uint64_t *hashes;                 /* [max_hashes] */
    int64_t max_keys;
    uint64_t *scratch_keys;           /* [max_keys] */
    int64_t *scratch_columns;         /* [max_keys] */
    int64_t max_entries;
    int32_t *indices;                 /* [max_entries] */
    ff_kept_columns kept;             /* the grouped lines' known columns by store row (no
                                         groups: kept.num_groups 0) */
} ft_list_buffers;

/* ft_tag of a batch whose template reads value lists (prefixes, n-grams, bags, ...):
 * the J items' values at each token from a value store (fv_item_values), the lines'
 * keys crossed from them and looked up (ff_list_rows, t's lines reading items in
 * [0, J)), then the state scores and the search (ft_tag on those rows), the steps the
 * batch path runs one by one, bit for bit.
 *   store, items [J, FV_FIELDS], token_rows [C, N]   as fv_item_values takes them
 *   num_grouped, group_column   t's first num_grouped lines read only the token's own
 *                value of column group_column: their known columns are kept across
 *                calls in lb->kept by the value's store row (ff_list_rows_kept), when
 *                num_grouped and lb->kept.num_groups are not 0
 *   offsets [B+1] or NULL (B is 1), token_class [N] or NULL, path [N], score [B]
 *                                                   as ft_tag takes them
 *   needed [3]   OVERWRITTEN: the room the batch needs in hashes, keys of one token and
 *                entries (each at least what it takes)
 * Returns FV_SHORT, having written only `needed` and the buffers, when the buffers are
 * too small for it; FC_BAD_ARGUMENT if the batch passes max_tokens or max_items or a
 * step rejects its arguments; else ft_tag's status. */
int ft_tag_lists(const ft_tagger *t, const fc_scores *scores, ft_tag_buffers *b, ft_list_buffers *lb,
                 const ft_value_store *store, int32_t num_items, const int64_t *items, int64_t num_tokens,
                 int32_t num_sequences, const int64_t *offsets, int32_t num_columns, const int64_t *token_rows,
                 int32_t num_grouped, int32_t group_column, const int32_t *token_class, int32_t *path,
                 double *score, int64_t *needed);

#endif
