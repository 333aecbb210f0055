/*
 * fstcrf_online.c -- the mistake of one sentence for the online learners (see the header).
 *
 * One call replaces what cost about a millisecond of Python per sentence
 * (building and checking a Potentials, a k-best call, a numpy difference):
 * the dynamic programs are the kernel's and the emission loop the feature
 * file's ff_emissions; this file gathers their inputs, reads the paths and
 * accumulates the difference in a dense scratch vector, clearing what it
 * touched.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fstcrf_online.h"

static int32_t decoding_states(const fo_problem *p)
{
    return p->decoding->num_states;
}

int64_t fo_workspace_doubles(const fo_problem *p, int64_t t_max)
{
    const int32_t S = p->model->num_states, S2 = decoding_states(p), E2 = p->decoding->num_edges;
    const int64_t gathered = p->state_map != NULL ? t_max * S2 : 0;
    return t_max * S + gathered + t_max * S2 + (int64_t)p->num_classes * E2 + ff_work_doubles(p->dictionary)
           + fc_workspace_doubles(S2, E2, p->num_classes, t_max, 2) + 2;
}

int64_t fo_workspace_ints(const fo_problem *p, int64_t t_max)
{
    return fc_workspace_ints(decoding_states(p), p->decoding->num_edges, t_max, 2) + 2 * t_max + 1;
}

/* The model edge from state src to state dst (binary search among the edges
 * entering dst, whose sources ascend), or -1 if there is none. */
static int32_t model_edge(const fc_graph *g, int32_t src, int32_t dst)
{
    int32_t low = g->in_ptr[dst], high = g->in_ptr[dst + 1];
    while (low < high) {
        const int32_t middle = low + (high - low) / 2;
        if (g->in_src[middle] < src)
            low = middle + 1;
        else
            high = middle;
    }
    return low < g->in_ptr[dst + 1] && g->in_src[low] == src ? low : -1;
}

/* Indices touched so far ([count] of index) and their sums in dense. */
typedef struct {
    int64_t *index;
    int64_t count;
    int64_t capacity;
    int overflow;
    double *dense;
    uint8_t *marks;
} touched;

static void add(touched *acc, int64_t i, double amount)
{
    if (!acc->marks[i]) {
        if (acc->count == acc->capacity) {
            acc->overflow = 1;
            return;
        }
        acc->marks[i] = 1;
        acc->index[acc->count++] = i;
    }
    acc->dense[i] += amount;
}

static int ascending(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* 1 if output q fires when the state is s, else 0. */
static int fires(const ff_dictionary *d, int32_t q, int32_t s)
{
    return q == s || (d->num_labels > 0 && q == d->num_states + d->state_label[s]);
}

/* The weight indices [2] of the transition into token t of a path (class c) along
 * the model edge from src to dst, or NULL if there is no such edge. */
static const int64_t *transition_weights(const fo_problem *p, int32_t c, int32_t src, int32_t dst)
{
    const int32_t e = model_edge(p->model, src, dst);
    return e < 0 ? NULL : p->edge_weights + ((int64_t)c * p->model->num_edges + e) * 2;
}

/* Add sign to the weights of the transition into token t (class c) along the
 * model edge from src to dst; 0 if there is no such edge. */
static int add_transition(const fo_problem *p, touched *acc, int32_t c, int32_t src, int32_t dst,
                          double sign)
{
    const int64_t *pair = transition_weights(p, c, src, dst);
    if (pair == NULL)
        return 0;
    for (int k = 0; k < 2; ++k)
        if (pair[k] >= 0)
            add(acc, pair[k], sign);
    return 1;
}

/* FC_OK if the sentence fits the workspace and its path (or gold) states and
 * token classes are in range. */
static int check_sentence(const fo_problem *p, const ff_tokens *x, const int32_t *token_class,
                          const int32_t *path, const fo_workspace *ws)
{
    const int64_t n = x->num_tokens;
    if (n < 1 || n > ws->t_max)
        return FC_BAD_ARGUMENT;
    for (int64_t t = 0; t < n; ++t)
        if (path[t] < 0 || path[t] >= p->model->num_states
            || (token_class != NULL && (token_class[t] < 0 || token_class[t] >= p->num_classes)))
            return FC_BAD_ARGUMENT;
    return FC_OK;
}

/* The non-zero entries of phi(plus) - phi(minus) into index, value (see the header). */
static int difference(const fo_problem *p, const ff_tokens *x, const int32_t *token_class,
                      const int32_t *plus, const int32_t *minus, int64_t capacity, int64_t *index,
                      double *value, int64_t *count, fo_workspace *ws)
{
    const ff_dictionary *d = p->dictionary;
    touched acc = {index, 0, capacity, 0, ws->dense, ws->marks};
    int edges_ok = 1;
    for (int64_t t = 0; t < x->num_tokens; ++t) {
        if (plus[t] != minus[t]) {
            for (int64_t j = x->indptr[t]; j < x->indptr[t + 1]; ++j) {
                const int32_t pred = x->indices[j];
                const double v = x->values != NULL ? x->values[j] : 1.0;
                for (int64_t f = d->ptr[pred]; f < d->ptr[pred + 1]; ++f) {
                    const int delta = fires(d, d->output[f], plus[t]) - fires(d, d->output[f], minus[t]);
                    if (delta != 0)
                        add(&acc, f, (double)delta * v);
                }
            }
        }
        if (t > 0 && (plus[t] != minus[t] || plus[t - 1] != minus[t - 1])) {
            const int32_t c = token_class != NULL ? token_class[t] : 0;
            edges_ok &= add_transition(p, &acc, c, plus[t - 1], plus[t], 1.0);
            edges_ok &= add_transition(p, &acc, c, minus[t - 1], minus[t], -1.0);
        }
    }
    qsort(index, (size_t)acc.count, sizeof(int64_t), ascending);
    int64_t kept = 0;
    for (int64_t k = 0; k < acc.count; ++k) {
        const int64_t i = index[k];
        const double sum = ws->dense[i];
        ws->dense[i] = 0.0;
        ws->marks[i] = 0;
        if (sum != 0.0) {
            index[kept] = i;
            value[kept++] = sum;
        }
    }
    *count = kept;
    return acc.overflow || !edges_ok ? FC_BAD_ARGUMENT : FC_OK;
}

/* Whether a path other than the Viterbi path (decoding states path [n]) may score
 * as high as it (best): the largest max-marginal off the path reaches best, up
 * to a margin for the rounding of the forward and backward sums, 1e-9 of the
 * largest magnitude a path's partial sums can have (emit [n, S2], trans [C E2]). */
static int may_tie(const double *max_marg, const int32_t *path, int64_t n, int32_t S2, double best,
                   const double *emit, const double *trans, int64_t num_trans)
{
    double largest_transition = 0.0, magnitude = 0.0;
    for (int64_t e = 0; e < num_trans; ++e)
        largest_transition = fmax(largest_transition, fabs(trans[e]));
    for (int64_t t = 0; t < n; ++t) {
        double largest = 0.0;
        for (int32_t s = 0; s < S2; ++s)
            largest = fmax(largest, fabs(emit[t * S2 + s]));
        magnitude += largest + (t > 0 ? largest_transition : 0.0);
    }
    const double margin = 1e-9 * (1.0 + magnitude);
    for (int64_t t = 0; t < n; ++t)
        for (int32_t s = 0; s < S2; ++s)
            if (s != path[t] && max_marg[t * S2 + s] >= best - margin)
                return 1;
    return 0;
}

int fo_mistake(const fo_problem *p, const ff_tokens *x, const int32_t *token_class,
               const int32_t *gold, const double *theta, int32_t *rival, int32_t *wrong,
               int64_t capacity, int64_t *index, double *value, int64_t *count, fo_workspace *ws)
{
    const int64_t n = x->num_tokens;
    const int32_t S = p->model->num_states, S2 = decoding_states(p), E2 = p->decoding->num_edges;
    const int32_t C = p->num_classes;
    int status = check_sentence(p, x, token_class, gold, ws);
    if (status != FC_OK)
        return status;
    /* carve the scratch space */
    double *emit = ws->doubles;
    double *gathered = p->state_map != NULL ? emit + ws->t_max * S : emit;
    double *max_marg = emit + ws->t_max * S + (p->state_map != NULL ? ws->t_max * S2 : 0);
    double *trans = max_marg + ws->t_max * S2;
    double *work = trans + (int64_t)C * E2;
    double *scores = work + ff_work_doubles(p->dictionary);
    fc_workspace kernel_ws = {ws->t_max, 2, scores + 2, ws->ints};
    int32_t *paths = ws->ints + fc_workspace_ints(S2, E2, ws->t_max, 2);
    int32_t *found = paths + 2 * ws->t_max;
    status = ff_emissions(p->dictionary, x, theta, 1.0, emit, work);
    if (status != FC_OK)
        return status;
    if (p->state_map != NULL)
        for (int64_t t = 0; t < n; ++t)
            for (int32_t s = 0; s < S2; ++s)
                gathered[t * S2 + s] = emit[t * S + p->state_map[s]];
    for (int32_t c = 0; c < C; ++c)
        for (int32_t e = 0; e < E2; ++e) {
            const int32_t model_e = p->edge_map != NULL ? p->edge_map[e] : e;
            const int64_t *pair = p->edge_weights + ((int64_t)c * p->model->num_edges + model_e) * 2;
            double score = pair[0] >= 0 ? theta[pair[0]] : 0.0;
            if (pair[1] >= 0)
                score += theta[pair[1]];
            trans[(int64_t)c * E2 + e] = score;
        }
    const int64_t offsets[2] = {0, n};
    const fc_batch batch = {1, offsets, gathered, token_class};
    const fc_scores kernel_scores = {trans, p->start, p->final, C, NULL, 0};
    /* The rival is the Viterbi path unless that is gold; then the second best if
     * it ties.  fc_kbest's first path is fc_viterbi's (the same sums and tie
     * order), so it only runs when the max-marginals leave a tie possible. */
    status = fc_viterbi(p->decoding, &kernel_scores, &batch, paths, scores, &kernel_ws);
    if (status != FC_OK)
        return status;
    int32_t rank = 0;
    int best_is_gold = 1;
    for (int64_t t = 0; t < n; ++t) {
        const int32_t s = p->state_map != NULL ? p->state_map[paths[t]] : paths[t];
        best_is_gold &= s == gold[t];
    }
    if (best_is_gold) {
        status = fc_max_marginals(p->decoding, &kernel_scores, &batch, max_marg, scores + 1, &kernel_ws);
        if (status != FC_OK)
            return status;
        if (!may_tie(max_marg, paths, n, S2, scores[0], gathered, trans, (int64_t)C * E2)) {
            *wrong = -1;
            return FC_OK;
        }
        status = fc_kbest(p->decoding, &kernel_scores, &batch, 2, paths, scores, found, &kernel_ws);
        if (status != FC_OK)
            return status;
        if (found[0] < 2 || scores[1] < scores[0]) {
            *wrong = -1;
            return FC_OK;
        }
        rank = 1;
    }
    int32_t differ = 0;
    for (int64_t t = 0; t < n; ++t) {
        const int32_t s2 = paths[rank * n + t];
        rival[t] = p->state_map != NULL ? p->state_map[s2] : s2;
        differ += rival[t] != gold[t];
    }
    *wrong = differ;
    if (index == NULL)
        return FC_OK;
    return difference(p, x, token_class, gold, rival, capacity, index, value, count, ws);
}

int fo_path_score(const fo_problem *p, const ff_tokens *x, const int32_t *token_class,
                  const int32_t *path, const double *theta, double theta_scale, double *score,
                  fo_workspace *ws)
{
    const ff_dictionary *d = p->dictionary;
    const int64_t n = x->num_tokens;
    int status = check_sentence(p, x, token_class, path, ws);
    if (status != FC_OK)
        return status;
    for (int64_t j = x->indptr[0]; j < x->indptr[n]; ++j)
        if (x->indices[j] < 0 || x->indices[j] >= d->num_predicates)
            return FC_BAD_ARGUMENT;
    /* each emission as ff_emissions sums it, for the path's state only */
    double total = 0.0;
    for (int64_t t = 0; t < n; ++t) {
        const int32_t state = path[t];
        const int32_t label = d->num_labels > 0 ? d->num_states + d->state_label[state] : -1;
        double state_sum = 0.0, label_sum = 0.0;
        for (int64_t j = x->indptr[t]; j < x->indptr[t + 1]; ++j) {
            const int32_t pred = x->indices[j];
            const double v = x->values != NULL ? x->values[j] : 1.0;
            for (int64_t f = d->ptr[pred]; f < d->ptr[pred + 1]; ++f) {
                if (d->output[f] == state)
                    state_sum += v * theta[f];
                else if (d->output[f] == label)
                    label_sum += v * theta[f];
            }
        }
        total += theta_scale * (label >= 0 ? state_sum + label_sum : state_sum);
    }
    for (int64_t t = 1; t < n; ++t) {
        const int64_t *pair = transition_weights(p, token_class != NULL ? token_class[t] : 0, path[t - 1], path[t]);
        if (pair == NULL)
            return FC_BAD_ARGUMENT;
        double transition = pair[0] >= 0 ? theta_scale * theta[pair[0]] : 0.0;
        if (pair[1] >= 0)
            transition += theta_scale * theta[pair[1]];
        total += transition;
    }
    *score = total;
    return FC_OK;
}

int fo_add_path(const fo_problem *p, const ff_tokens *x, const int32_t *token_class,
                const int32_t *path, double scale, double *out, fo_workspace *ws)
{
    const int64_t n = x->num_tokens;
    int status = check_sentence(p, x, token_class, path, ws);
    if (status != FC_OK)
        return status;
    for (int64_t t = 1; t < n; ++t)
        if (model_edge(p->model, path[t - 1], path[t]) < 0)
            return FC_BAD_ARGUMENT;
    status = ff_add_paths(p->dictionary, x, path, NULL, scale, out);
    if (status != FC_OK)
        return status;
    touched acc = {ws->int64s, 0, 2 * ws->t_max, 0, ws->dense, ws->marks};
    for (int64_t t = 1; t < n; ++t)
        add_transition(p, &acc, token_class != NULL ? token_class[t] : 0, path[t - 1], path[t], 1.0);
    for (int64_t k = 0; k < acc.count; ++k) {
        const int64_t i = acc.index[k];
        out[i] += scale * ws->dense[i];
        ws->dense[i] = 0.0;
        ws->marks[i] = 0;
    }
    return FC_OK;
}
