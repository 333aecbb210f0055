/*
 * fstcrf_train.c -- the log-likelihood gradient of a block (see the header).
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "fstcrf_train.h"

/* Rows a group's buffers hold: the group size, or the longest sentence. */
static int64_t group_rows(int64_t group_tokens, int64_t t_max)
{
    return group_tokens > t_max ? group_tokens : t_max;
}

/* doubles: emit [G, S] | graph_emit [G, S'] | graph_marg [G, S'] | clamp_emit [G, S']
 *          | clamp_marg [G, S'] | marg [G, S] | log_z [G] | clamp_log_z [G]
 *          | counts [C, E'] | clamp_counts [C, E'] | kernel [fc_workspace_doubles]
 *          | features [S + L]
 * where G = max(group_tokens, t_max). */
int64_t ft_workspace_doubles(const ff_dictionary *d, const fc_graph *g, int32_t C,
                             int64_t group_tokens, int64_t t_max)
{
    const int64_t G = group_rows(group_tokens, t_max), S = d->num_states, Sg = g->num_states;
    return 2 * G * S + 4 * G * Sg + 2 * G + 2 * (int64_t)C * g->num_edges
           + fc_workspace_doubles(g->num_states, g->num_edges, C, t_max, 1) + ff_work_doubles(d);
}

/* ints: clamp_class [G] | kernel [fc_workspace_ints] */
int64_t ft_workspace_ints(const fc_graph *g, int64_t group_tokens, int64_t t_max)
{
    return group_rows(group_tokens, t_max) + fc_workspace_ints(g->num_states, g->num_edges, t_max, 1);
}

/* int64s: group offsets [G+1] | clamped offsets [G+1] */
int64_t ft_workspace_int64s(int64_t group_tokens, int64_t t_max)
{
    return 2 * (group_rows(group_tokens, t_max) + 1);
}

typedef struct {
    double *emit, *graph_emit, *graph_marg, *clamp_emit, *clamp_marg, *marg;
    double *log_z, *clamp_log_z, *counts, *clamp_counts, *features;
    int64_t *offsets, *clamp_offsets;
    int32_t *clamp_class;
    fc_workspace kernel;
} ft_buffers;

static ft_buffers carve(const ff_dictionary *d, const fc_graph *g, int32_t C, ft_workspace *ws)
{
    const int64_t G = group_rows(ws->group_tokens, ws->t_max), S = d->num_states, Sg = g->num_states;
    const int64_t scores = (int64_t)C * g->num_edges;
    ft_buffers b;
    b.emit = ws->doubles;
    b.graph_emit = b.emit + G * S;
    b.graph_marg = b.graph_emit + G * Sg;
    b.clamp_emit = b.graph_marg + G * Sg;
    b.clamp_marg = b.clamp_emit + G * Sg;
    b.marg = b.clamp_marg + G * Sg;
    b.log_z = b.marg + G * S;
    b.clamp_log_z = b.log_z + G;
    b.counts = b.clamp_log_z + G;
    b.clamp_counts = b.counts + scores;
    b.kernel.t_max = ws->t_max;
    b.kernel.k = 1;
    b.kernel.doubles = b.clamp_counts + scores;
    b.clamp_class = ws->ints;
    b.kernel.ints = ws->ints + G;
    b.features = b.kernel.doubles + fc_workspace_doubles(g->num_states, g->num_edges, C, ws->t_max, 1);
    b.offsets = ws->int64s;
    b.clamp_offsets = b.offsets + G + 1;
    return b;
}

static int check_arguments(const ff_dictionary *d, const ff_tokens *x, const ft_sentences *s,
                           const fc_graph *g, int32_t sc_classes, const int32_t *state_map,
                           const ft_workspace *ws)
{
    if (s->num_sequences < 0 || ws->group_tokens <= 0 || g->num_states <= 0 || sc_classes < 1
        || (state_map == NULL && g->num_states != d->num_states)
        || (s->partial != NULL && (s->allowed == NULL || s->state_label == NULL))
        || s->offsets[0] != 0 || s->offsets[s->num_sequences] != x->num_tokens)
        return FC_BAD_ARGUMENT;
    for (int32_t i = 0; i < s->num_sequences; ++i) {
        const int64_t T = s->offsets[i + 1] - s->offsets[i];
        if (T <= 0 || T > ws->t_max) return FC_BAD_ARGUMENT;
    }
    if (state_map != NULL)
        for (int32_t k = 0; k < g->num_states; ++k)
            if (state_map[k] < 0 || state_map[k] >= d->num_states) return FC_BAD_ARGUMENT;
    if (s->partial != NULL)
        for (int32_t k = 0; k < d->num_states; ++k)
            if (s->state_label[k] < 0 || s->state_label[k] >= s->num_labels) return FC_BAD_ARGUMENT;
    return FC_OK;
}

/* Worse of two statuses (FC_BAD_ARGUMENT > FC_INFEASIBLE > FC_OK). */
static int worse(int a, int b)
{
    return a > b ? a : b;
}

/* The clamped pass over the partial sentences of group [first, last): subtracts
 * their clamped log Z from *loss, their clamped marginals from graph_marg and
 * adds their clamped edge counts to clamp_counts. */
static int clamped_pass(const ft_sentences *s, int32_t first, int32_t last, int64_t group_start,
                        const fc_graph *g, const fc_scores *sc, const int32_t *state_map,
                        ft_buffers *b, double *loss)
{
    const int32_t Sg = g->num_states, L = s->num_labels;
    int32_t count = 0;
    b->clamp_offsets[0] = 0;
    for (int32_t i = first; i < last; ++i) {
        if (!s->partial[i]) continue;
        const int64_t lo = s->offsets[i] - group_start, hi = s->offsets[i + 1] - group_start;
        const int64_t out = b->clamp_offsets[count];
        if (s->token_class != NULL)
            for (int64_t t = lo; t < hi; ++t) b->clamp_class[out + t - lo] = s->token_class[group_start + t];
        for (int64_t t = lo; t < hi; ++t) {
            const uint8_t *allowed = s->allowed + (group_start + t) * L;
            const double *in = b->graph_emit + t * Sg;
            double *row = b->clamp_emit + (out + t - lo) * Sg;
            for (int32_t k = 0; k < Sg; ++k)
                row[k] = allowed[s->state_label[state_map ? state_map[k] : k]] ? in[k] : -INFINITY;
        }
        b->clamp_offsets[++count] = out + hi - lo;
    }
    if (count == 0) return FC_OK;
    const fc_batch batch = {count, b->clamp_offsets, b->clamp_emit,
                            s->token_class != NULL ? b->clamp_class : NULL};
    const int status = fc_forward_backward(g, sc, &batch, b->clamp_log_z, b->clamp_marg,
                                           b->clamp_counts, &b->kernel);
    int32_t k = 0;
    for (int32_t i = first; i < last; ++i) {
        if (!s->partial[i]) continue;
        if (b->clamp_log_z[k] > -INFINITY) *loss -= b->clamp_log_z[k];
        const double *clamped = b->clamp_marg + b->clamp_offsets[k] * Sg;
        double *free = b->graph_marg + (s->offsets[i] - group_start) * Sg;
        const int64_t cells = (s->offsets[i + 1] - s->offsets[i]) * Sg;
        for (int64_t n = 0; n < cells; ++n) free[n] -= clamped[n];
        ++k;
    }
    return status;
}

int ft_gradient(const ff_dictionary *d, const ff_tokens *x, const ft_sentences *s,
                const fc_graph *g, const fc_scores *sc, const int32_t *state_map,
                const double *theta, double theta_scale, double grad_scale,
                double *loss, double *grad, const int64_t *grad_at, double *grad_direct,
                double *edge_counts, ft_workspace *ws)
{
    int status = check_arguments(d, x, s, g, sc->num_classes, state_map, ws);
    if (status != FC_OK) return status;
    const int32_t S = d->num_states, Sg = g->num_states;
    const int64_t scores = (int64_t)sc->num_classes * g->num_edges;
    ft_buffers b = carve(d, g, sc->num_classes, ws);
    /* a state's score is its own features' plus its label's: where the first are 0, the
     * states of one label score alike and share their exp */
    fc_scores by_label = *sc;
    if (state_map == NULL && d->num_labels > 0 && d->num_labels < S && sc->emit_class == NULL) {
        by_label.emit_class = d->state_label;
        by_label.num_emit_classes = d->num_labels;
    }
    memset(b.counts, 0, sizeof(double) * (size_t)scores);
    memset(b.clamp_counts, 0, sizeof(double) * (size_t)scores);
    double block_loss = 0.0;
    for (int32_t first = 0; first < s->num_sequences;) {
        /* the group: sentences first .. last-1, at most group_tokens tokens (or one sentence) */
        const int64_t start = s->offsets[first];
        int32_t last = first + 1;
        while (last < s->num_sequences && s->offsets[last + 1] - start <= ws->group_tokens) ++last;
        const int64_t n = s->offsets[last] - start;
        ff_tokens tokens = {n, x->indptr + start, x->indices, x->values};
        status = worse(status, ff_emissions(d, &tokens, theta, theta_scale, b.emit, b.features));
        if (status == FC_BAD_ARGUMENT) return status;
        if (state_map != NULL)
            for (int64_t t = 0; t < n; ++t)
                for (int32_t k = 0; k < Sg; ++k)
                    b.graph_emit[t * Sg + k] = b.emit[t * S + state_map[k]];
        else
            b.graph_emit = b.emit;
        for (int32_t i = first; i <= last; ++i) b.offsets[i - first] = s->offsets[i] - start;
        const fc_batch batch = {last - first, b.offsets, b.graph_emit,
                                s->token_class != NULL ? s->token_class + start : NULL};
        status = worse(status, fc_forward_backward(g, &by_label, &batch, b.log_z, b.graph_marg, b.counts,
                                                   &b.kernel));
        for (int32_t i = 0; i < last - first; ++i)
            if (b.log_z[i] > -INFINITY) block_loss += b.log_z[i];
        if (s->partial != NULL)
            status = worse(status, clamped_pass(s, first, last, start, g, &by_label, state_map, &b,
                                                &block_loss));
        double *marg = b.graph_marg;
        if (state_map != NULL) {
            marg = b.marg;
            memset(marg, 0, sizeof(double) * (size_t)(n * S));
            for (int64_t t = 0; t < n; ++t)
                for (int32_t k = 0; k < Sg; ++k)
                    marg[t * S + state_map[k]] += b.graph_marg[t * Sg + k];
        }
        status = worse(status, ff_accumulate_at(d, &tokens, marg, grad_scale, grad_at, grad, grad_direct,
                                                  b.features));
        if (status == FC_BAD_ARGUMENT) return status;
        first = last;
    }
    *loss += block_loss;
    for (int64_t e = 0; e < scores; ++e) edge_counts[e] += grad_scale * (b.counts[e] - b.clamp_counts[e]);
    return status;
}

int ft_best_paths(const ff_dictionary *d, const ff_tokens *x, const double *theta, const fc_graph *g,
                  const fc_scores *sc, int32_t num_sequences, const int64_t *offsets,
                  const int32_t *token_class, double *emit, double *work, fc_workspace *ws,
                  int32_t *path, double *score)
{
    if (d->num_states != g->num_states || num_sequences < 0 || offsets[0] != 0 ||
        offsets[num_sequences] != x->num_tokens)
        return FC_BAD_ARGUMENT;
    int status = ff_emissions(d, x, theta, 1.0, emit, work);
    if (status != FC_OK)
        return status;
    const fc_batch batch = {num_sequences, offsets, emit, token_class};
    return fc_viterbi(g, sc, &batch, path, score, ws);
}
