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

/* Draw an index from weights exp(logw[i] - max), i < n; all-(-inf) gives -1. */
static int32_t draw_log_weighted(const double *logw, int32_t n, double *scratch, uint64_t *rng)
{
    const double m = max_of(logw, n);
    if (m == -INFINITY) return -1;
    double total = 0.0;
    int32_t last_positive = -1;
    for (int32_t i = 0; i < n; ++i) {
        scratch[i] = exp(logw[i] - m);
        total += scratch[i];
        if (scratch[i] > 0.0) last_positive = i;
    }
    double u = uniform01(rng) * total;
    for (int32_t i = 0; i < n; ++i) {
        if (u < scratch[i]) return i;
        u -= scratch[i];
    }
    return last_positive; /* rounding left u just past the total */
}

int fc_sample(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
              uint64_t seed, int64_t first_index, int32_t num_samples,
              int32_t *samples, fc_workspace *ws)
{
    int status = fc__check_workspace(g, sc, b, ws, 1);
    if (status != FC_OK) return status;
    const int32_t S = g->num_states, E = g->num_edges;
    const int64_t N = b->offsets[b->num_sequences];
    buffers w = fc__carve(g, sc, ws);
    fc__prepare_transitions(g, sc, &w);
    double *logw = w.vec_b, *scratch = w.vec_a;
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const int32_t *cls = b->token_class ? b->token_class + off : NULL;
        fc__chain_pass(SEMIRING_LOG, 0, g, sc, cls, b->emit + off * S, T, &w, w.alpha, NULL);
        for (int32_t r = 0; r < num_samples; ++r) {
            int32_t *out = samples + (int64_t)r * N + off;
            uint64_t rng = seed;
            rng ^= splitmix64(&rng) + (uint64_t)(first_index + i) * 0xD1B54A32D192ED03ULL;
            rng ^= splitmix64(&rng) + (uint64_t)r * 0x8CB92BA72F3D8DD7ULL;
            const double *last = w.alpha + (T - 1) * S;
            for (int32_t s = 0; s < S; ++s) logw[s] = last[s] + sc->final[s];
            int32_t s = draw_log_weighted(logw, S, scratch, &rng);
            if (s < 0) {
                status = FC_INFEASIBLE;
                for (int64_t t = 0; t < T; ++t) out[t] = -1;
                continue;
            }
            out[T - 1] = s;
            for (int64_t t = T - 1; t > 0; --t) {
                const int32_t lo = g->in_ptr[s], n_in = g->in_ptr[s + 1] - lo;
                const double *prev = w.alpha + (t - 1) * S, *trans = sc->trans + trans_row(cls, t, E);
                for (int32_t k = 0; k < n_in; ++k)
                    logw[k] = prev[g->in_src[lo + k]] + trans[lo + k];
                s = g->in_src[lo + draw_log_weighted(logw, n_in, scratch, &rng)];
                out[t - 1] = s;
            }
        }
    }
    return status;
}
