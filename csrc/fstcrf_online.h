/*
 * fstcrf_online.h -- the mistake of one sentence for the online learners.
 *
 * Passive-aggressive, AROW and the averaged perceptron look, sentence by
 * sentence, for the rival of the gold path under the current weights: the
 * best path if it is not gold, else the second best if it scores as high
 * (a tie counts as a mistake), else none.  Their updates then need the
 * feature difference phi(gold) - phi(rival), which touches few of the D
 * weights.  fo_mistake does both in one call: emission scores from the
 * sentence's predicate rows (ff_emissions), transition scores from the
 * weights, the Viterbi path (fc_viterbi; when it is gold, fc_max_marginals
 * tells whether another path may tie, and only then fc_kbest settles it) and
 * the sparse difference.
 *
 * Weights.  theta [D] holds the F feature weights of the dictionary first;
 * the transition into a token of class c along model edge e scores the sum
 * of the (at most two) weights theta[edge_weights[c, e, k]], k = 0, 1, that
 * are not -1 (0 if both are -1).  This covers one weight per edge, weights
 * shared with a lower tagger's deviations, and edges without a weight.
 *
 * Decoding graph.  Paths are searched on a graph of S' states that is the
 * model's own (state_map NULL) or a restriction of it (a training grammar):
 * decoding state s' stands for model state state_map[s'] and decoding edge e'
 * for model edge edge_map[e'].  Gold and rival are model states.
 *
 * Conventions are those of fstcrf_kernel.h: shapes in brackets, no globals,
 * no allocation, every buffer owned by the caller.  The caller validates the
 * problem once; each call checks its sentence (see fo_mistake).
 */
#ifndef FSTCRF_ONLINE_H
#define FSTCRF_ONLINE_H

#include <stdint.h>

#include "fstcrf_features.h"
#include "fstcrf_kernel.h"

/* What stays fixed while a learner runs. */
typedef struct {
    const ff_dictionary *dictionary; /* F features over S model states */
    const fc_graph *model;           /* the model's topology: S states, E edges */
    const fc_graph *decoding;        /* the graph paths are searched on: S' states, E' edges */
    const int32_t *state_map;        /* [S'] model state of each decoding state, or NULL (decoding = model) */
    const int32_t *edge_map;         /* [E'] model edge of each decoding edge, or NULL (decoding = model) */
    const double *start;             /* [S'] 0 where a path may start, -INFINITY elsewhere */
    const double *final;             /* [S'] 0 where a path may end, -INFINITY elsewhere */
    int32_t num_classes;             /* C >= 1 token classes */
    const int64_t *edge_weights;     /* [C, E, 2] weight indices in [0, D), or -1 */
    int64_t num_weights;             /* D */
} fo_problem;

/* Caller-owned scratch space for sentences of up to t_max tokens. */
typedef struct {
    int64_t t_max;
    double *doubles;                 /* [fo_workspace_doubles(p, t_max)] */
    int32_t *ints;                   /* [fo_workspace_ints(p, t_max)] */
    int64_t *int64s;                 /* [2 t_max] */
    double *dense;                   /* [D] all 0 between calls (each call clears what it used) */
    uint8_t *marks;                  /* [D] all 0 between calls (likewise) */
} fo_workspace;

int64_t fo_workspace_doubles(const fo_problem *p, int64_t t_max);
int64_t fo_workspace_ints(const fo_problem *p, int64_t t_max);

/* The rival of one sentence's gold path and, optionally, the feature difference.
 *   x            the sentence's n token rows (ff_tokens), 1 <= n <= t_max
 *   token_class  [n] class of each token in [0, C), or NULL: class 0
 *   gold         [n] gold model states in [0, S)
 *   theta        [D] weights
 *   rival        [n] WRITTEN when there is a rival: its model states
 *   wrong        WRITTEN: number of tokens where rival and gold differ, -1 if there is no rival
 *   index, value [capacity] WRITTEN when there is a rival and index is not NULL:
 *                the non-zero entries of phi(gold) - phi(rival), indices
 *                increasing; *count = their number.  Feature f of a token row
 *                entry j adds values[j] (1 without values) times fires(gold) -
 *                fires(rival), in the order of tokens, entries and features;
 *                each transition adds +-1 to its weights.
 * Returns FC_OK; FC_INFEASIBLE if the sentence has no path; FC_BAD_ARGUMENT,
 * before writing any output, for a bad token block or gold state, n outside
 * 1..t_max, or (after rival and wrong) a capacity smaller than the number of
 * weights the difference touches. */
int fo_mistake(const fo_problem *p, const ff_tokens *x, const int32_t *token_class,
               const int32_t *gold, const double *theta, int32_t *rival, int32_t *wrong,
               int64_t capacity, int64_t *index, double *value, int64_t *count, fo_workspace *ws);

/* The score of one path under theta_scale * theta: its emission scores in token
 * order, then its transition scores in token order (each transition the sum of
 * theta_scale * theta[i] over its weights).
 *   x, token_class as in fo_mistake;  path [n] model states;  score WRITTEN
 * Returns FC_OK, or FC_BAD_ARGUMENT (writing nothing) for a bad block or path. */
int fo_path_score(const fo_problem *p, const ff_tokens *x, const int32_t *token_class,
                  const int32_t *path, const double *theta, double theta_scale, double *score,
                  fo_workspace *ws);

/* Add scale * phi(path) to out [D]: the features in the order of ff_add_paths,
 * then each transition weight once, scale times its count along the path.
 * Returns FC_OK, or FC_BAD_ARGUMENT (writing nothing) for a bad block or path. */
int fo_add_path(const fo_problem *p, const ff_tokens *x, const int32_t *token_class,
                const int32_t *path, double scale, double *out, fo_workspace *ws);

#endif
