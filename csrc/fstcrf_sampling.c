/*
 * fstcrf_sampling.c -- exact samples from p(y | x) by forward filtering,
 * backward sampling, with a counter-seeded splitmix64 generator; see
 * fstcrf_kernel.h for the contract.
 */
#include "fstcrf_internal.h"

/* ------------------------------------------------------------------------ */
/* Sampling                                                                  */
/* ------------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *state)
{
    return (double)(splitmix64(state) >> 11) * 0x1.0p-53;
}

/* Draw an index from non-negative weights w[i], i < n, summed in order; an all-zero
 * weight vector gives -1. */
static int32_t draw_weighted(const double *w, int32_t n, uint64_t *rng)
{
    double total = 0.0;
    int32_t last_positive = -1;
    for (int32_t i = 0; i < n; ++i) {
        total += w[i];
        if (w[i] > 0.0) last_positive = i;
    }
    if (last_positive < 0) return -1;
    double u = uniform01(rng) * total;
    for (int32_t i = 0; i < n; ++i) {
        if (u < w[i]) return i;
        u -= w[i];
    }
    return last_positive; /* rounding left u just past the total */
}

/* Draw an index from weights exp(logw[i] - max), i < n; all-(-inf) gives -1. */
static int32_t draw_log_weighted(const double *logw, int32_t n, double *scratch, uint64_t *rng)
{
    const double m = max_of(logw, n);
    if (m == -INFINITY) return -1;
    for (int32_t i = 0; i < n; ++i) scratch[i] = exp(logw[i] - m);
    return draw_weighted(scratch, n, rng);
}

/* The generator of draw r of sentence `index` under `seed`. */
static uint64_t draw_generator(uint64_t seed, int64_t index, int32_t r)
{
    uint64_t rng = seed;
    rng ^= splitmix64(&rng) + (uint64_t)index * 0xD1B54A32D192ED03ULL;
    rng ^= splitmix64(&rng) + (uint64_t)r * 0x8CB92BA72F3D8DD7ULL;
    return rng;
}

/* The state drawn from weights v [n]: probabilities (linear) or their logs. */
static int32_t draw_state(int linear, const double *v, int32_t n, double *scratch, uint64_t *rng)
{
    return linear ? draw_weighted(v, n, rng) : draw_log_weighted(v, n, scratch, rng);
}

/* Draws of one sentence of T tokens by backward sampling from its forward table
 * w->alpha, draw r into samples + r * N; FC_INFEASIBLE if it has no path.  The
 * table is log-domain (fc__chain_pass) or, with `linear`, the scaled pass's,
 * whose rows are proportional to the forward probabilities: a step back then
 * weighs a row's entries by the exponentiated transitions, with no exp or log. */
static int sample_sentence(int linear, const fc_graph *g, const fc_scores *sc, const buffers *w,
                           const int32_t *cls, int64_t T, uint64_t seed, int64_t index, int32_t num_samples,
                           int64_t N, int32_t *samples)
{
    const int32_t S = g->num_states, E = g->num_edges;
    double *v = w->vec_b, *scratch = w->vec_a;
    int status = FC_OK;
    for (int32_t r = 0; r < num_samples; ++r) {
        int32_t *out = samples + (int64_t)r * N;
        uint64_t rng = draw_generator(seed, index, r);
        const double *last = w->alpha + (T - 1) * S;
        for (int32_t s = 0; s < S; ++s) v[s] = linear ? last[s] * w->exp_final[s] : last[s] + sc->final[s];
        int32_t s = draw_state(linear, v, S, scratch, &rng);
        if (s < 0) {
            status = FC_INFEASIBLE;
            for (int64_t t = 0; t < T; ++t) out[t] = -1;
            continue;
        }
        out[T - 1] = s;
        for (int64_t t = T - 1; t > 0; --t) {
            const int32_t lo = g->in_ptr[s], n_in = g->in_ptr[s + 1] - lo;
            const double *prev = w->alpha + (t - 1) * S;
            const double *trans = (linear ? w->exp_trans : sc->trans) + trans_row(cls, t, E) + lo;
            for (int32_t k = 0; k < n_in; ++k)
                v[k] = linear ? prev[g->in_src[lo + k]] * trans[k] : prev[g->in_src[lo + k]] + trans[k];
            s = g->in_src[lo + draw_state(linear, v, n_in, scratch, &rng)];
            out[t - 1] = s;
        }
    }
    return status;
}

/* Whether sentence emissions emit [T, S] allow the scaled forward pass, and if so
 * that pass into w->alpha (fc_forward_backward's numerics). */
static int scaled_forward(const fc_graph *g, buffers *w, const double *emit, const int32_t *cls, int64_t T)
{
    const int32_t S = g->num_states;
    int scaled = w->scaled_ok;
    for (int64_t t = 0; t < T && scaled; ++t)
        w->emit_max[t] = fc__exp_shifted(emit + t * S, S, w->exp_emit + t * S, &scaled);
    return scaled && fc__scaled_pass(0, g, w, cls, T, w->alpha);
}

int fc__sample_scaled_sentence(int scaled_table, const fc_graph *g, const fc_scores *sc, buffers *w,
                               const double *emit, const int32_t *cls, int64_t T, uint64_t seed, int64_t index,
                               int32_t num_samples, int64_t N, int32_t *samples)
{
    const int linear = scaled_table || scaled_forward(g, w, emit, cls, T);
    if (!linear) fc__chain_pass(SEMIRING_LOG, 0, g, sc, cls, emit, T, w, w->alpha, NULL);
    return sample_sentence(linear, g, sc, w, cls, T, seed, index, num_samples, N, samples);
}

/* fc_sample (try_scaled 0) and fc_sample_scaled (1). */
static int sample_batch(int try_scaled, const fc_graph *g, const fc_scores *sc, const fc_batch *b, uint64_t seed,
                        int64_t first_index, int32_t num_samples, int32_t *samples, fc_workspace *ws)
{
    int status = fc__check_workspace(g, sc, b, ws, 1);
    if (status != FC_OK) return status;
    const int32_t S = g->num_states;
    const int64_t N = b->offsets[b->num_sequences];
    buffers w = fc__carve(g, sc, ws);
    fc__prepare_transitions(g, sc, &w);
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const double *emit = b->emit + off * S;
        const int32_t *cls = b->token_class ? b->token_class + off : NULL;
        int one;
        if (try_scaled) {
            one = fc__sample_scaled_sentence(0, g, sc, &w, emit, cls, T, seed, first_index + i, num_samples, N,
                                             samples + off);
        } else {
            fc__chain_pass(SEMIRING_LOG, 0, g, sc, cls, emit, T, &w, w.alpha, NULL);
            one = sample_sentence(0, g, sc, &w, cls, T, seed, first_index + i, num_samples, N, samples + off);
        }
        if (one != FC_OK) status = one;
    }
    return status;
}

int fc_sample(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
              uint64_t seed, int64_t first_index, int32_t num_samples,
              int32_t *samples, fc_workspace *ws)
{
    return sample_batch(0, g, sc, b, seed, first_index, num_samples, samples, ws);
}

int fc_sample_scaled(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
                     uint64_t seed, int64_t first_index, int32_t num_samples,
                     int32_t *samples, fc_workspace *ws)
{
    return sample_batch(1, g, sc, b, seed, first_index, num_samples, samples, ws);
}
