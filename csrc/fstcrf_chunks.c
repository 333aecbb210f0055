/*
 * fstcrf_chunks.c -- entity probabilities and MBR candidates in one call each
 * (see fstcrf_chunks.h): linear scores, scaled tables, chunk marginals and the
 * span passes of fstcrf_marginals.c over a batch, sentence by sentence.
 */
#include "fstcrf_chunks.h"
#include "fstcrf_internal.h"

/* A row of the scaled tables holds at least this mass (fstcrf_marginals.c), and so
 * must a sentence's closing mass, or the sentence is left to the log domain. */
#define CLOSING_FLOOR 1e-100

/* The work array, carved (fc_chunk_work_doubles gives its size). */
typedef struct {
    double *psi, *alpha, *beta, *log_prefix, *log_suffix, *log_z;
    double *weight, *start, *final, *mass;
    double *marks;   /* [N, 5K]: per token the mass of each prefix set, then of the type */
    double *passes;  /* [K, N]: the span passes from one token, one row per type */
    int64_t *reach;  /* [K] (as doubles' room): the last end each type's pass reaches */
} chunk_work;

int64_t fc_chunk_work_doubles(const fc_graph *g, const fc_scores *sc, const fc_batch *b, int32_t num_types)
{
    const int64_t S = g->num_states, E = g->num_edges, N = b->offsets[b->num_sequences];
    const int64_t K = num_types > 0 ? num_types : 0;
    return 3 * N * S + 2 * N + 1 + b->num_sequences + (int64_t)sc->num_classes * E + 4 * S + 5 * N * K + K * N + K;
}

static chunk_work carve(const fc_graph *g, const fc_scores *sc, const fc_batch *b, int32_t K, double *work)
{
    const int64_t S = g->num_states, E = g->num_edges, N = b->offsets[b->num_sequences];
    chunk_work w;
    w.psi = work;
    w.alpha = w.psi + N * S;
    w.beta = w.alpha + N * S;
    w.log_prefix = w.beta + N * S;
    w.log_suffix = w.log_prefix + N;
    w.log_z = w.log_suffix + N + 1;
    w.weight = w.log_z + b->num_sequences;
    w.start = w.weight + (int64_t)sc->num_classes * E;
    w.final = w.start + S;
    w.mass = w.final + S;
    w.marks = w.mass + 2 * S;
    w.passes = w.marks + 5 * N * K;
    w.reach = (int64_t *)(w.passes + (int64_t)K * N);
    return w;
}

/* out [n] = exp(v - the largest finite v), 0 where v is -inf. */
static void shifted_exp(const double *v, int64_t n, double *out)
{
    double top = -INFINITY;
    for (int64_t i = 0; i < n; ++i)
        if (isfinite(v[i]) && v[i] > top) top = v[i];
    if (!isfinite(top)) top = 0.0;
    for (int64_t i = 0; i < n; ++i) out[i] = exp(v[i] - top);
}

/* FC_OK when the offsets rise from 0 and the state types are in [-1, K). */
static int check_reading(const fc_graph *g, const fc_batch *b, const fc_chunk_reading *r)
{
    if (r->num_types < 0 || b->num_sequences < 0 || b->offsets[0] != 0) return FC_BAD_ARGUMENT;
    for (int32_t i = 0; i < b->num_sequences; ++i)
        if (b->offsets[i + 1] <= b->offsets[i]) return FC_BAD_ARGUMENT;
    for (int32_t s = 0; s < g->num_states; ++s)
        if (r->state_type[s] < -1 || r->state_type[s] >= r->num_types) return FC_BAD_ARGUMENT;
    return FC_OK;
}

/* Linear scores, psi and the scaled tables of every sentence: exact [B] and log Z. */
static void make_tables(const fc_graph *g, const fc_scores *sc, const fc_batch *b, chunk_work *w,
                        fc_batch *linear, int32_t *exact)
{
    const int64_t S = g->num_states, N = b->offsets[b->num_sequences];
    const int64_t CE = (int64_t)sc->num_classes * g->num_edges;
    double top = -INFINITY;
    for (int64_t e = 0; e < CE; ++e) top = sc->trans[e] > top ? sc->trans[e] : top;
    if (!isfinite(top)) top = 0.0;
    for (int64_t e = 0; e < CE; ++e) w->weight[e] = exp(sc->trans[e] - top);
    shifted_exp(sc->start, S, w->start);
    shifted_exp(sc->final, S, w->final);
    for (int64_t n = 0; n < N; ++n) {
        const double *row = b->emit + n * S;
        double m = -INFINITY;
        for (int64_t s = 0; s < S; ++s) m = row[s] > m ? row[s] : m;
        for (int64_t s = 0; s < S; ++s) w->psi[n * S + s] = exp(row[s] - m);
    }
    *linear = *b;
    linear->emit = w->psi;
    w->log_suffix[N] = 0.0;
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], last = b->offsets[i + 1] - 1;
        exact[i] = fc__scaled_sentence(g, w->weight, w->start, w->final, linear, off, last, w->alpha, w->beta,
                                       w->log_prefix, w->log_suffix);
        double closing = 0.0;
        if (exact[i])
            for (int64_t s = 0; s < S; ++s) closing += w->alpha[last * S + s] * w->final[s];
        exact[i] = exact[i] && closing >= CLOSING_FLOOR;
        w->log_z[i] = exact[i] ? w->log_prefix[last] + log(closing) : NAN;
    }
}

static fc__span_tables span_tables(const chunk_work *w, const fc_chunk_reading *r)
{
    fc__span_tables t = {w->weight, w->start, w->final, w->alpha, w->beta, w->log_prefix, w->log_suffix,
                         r->state_type, r->continuing};
    return t;
}

int fc_chunk_probabilities(const fc_graph *g, const fc_scores *sc, const fc_batch *b, const fc_chunk_reading *r,
                           int64_t num_spans, const int32_t *span_sentence, const int64_t *span_first,
                           const int64_t *span_last, const int32_t *span_type, double *probability,
                           int32_t *exact, double *work)
{
    if (check_reading(g, b, r) != FC_OK) return FC_BAD_ARGUMENT;
    for (int64_t m = 0; m < num_spans; ++m) {
        const int32_t i = span_sentence[m];
        if (i < 0 || i >= b->num_sequences || span_first[m] < 0 || span_last[m] < span_first[m] ||
            span_last[m] >= b->offsets[i + 1] - b->offsets[i] || span_type[m] < 0 || span_type[m] >= r->num_types)
            return FC_BAD_ARGUMENT;
    }
    chunk_work w = carve(g, sc, b, r->num_types, work);
    fc_batch linear;
    make_tables(g, sc, b, &w, &linear, exact);
    const fc__span_tables t = span_tables(&w, r);
    for (int64_t m = 0; m < num_spans; ++m) {
        const int32_t i = span_sentence[m];
        const int64_t off = b->offsets[i], reach = span_last[m] - span_first[m];
        probability[m] = 0.0;
        if (!exact[i]) continue;
        fc__span_pass(g, &linear, &t, off, b->offsets[i + 1] - 1, w.log_z[i], span_type[m], off + span_first[m],
                      reach, w.passes, w.mass);
        probability[m] = w.passes[reach];
    }
    return FC_OK;
}

int fc_path_chunks(const fc_graph *g, const fc_scores *sc, const fc_batch *b, const fc_chunk_reading *r,
                   const int32_t *path, int32_t *chunk_sentence, int64_t *chunk_first, int64_t *chunk_last,
                   int32_t *chunk_type, double *probability, int64_t *count, int32_t *exact, double *work)
{
    if (check_reading(g, b, r) != FC_OK) return FC_BAD_ARGUMENT;
    const int64_t N = b->offsets[b->num_sequences];
    for (int64_t n = 0; n < N; ++n)
        if (path[n] < 0 || path[n] >= g->num_states) return FC_BAD_ARGUMENT;
    int64_t m = 0;
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], end = b->offsets[i + 1];
        for (int64_t n = off; n < end; ++n) {
            const int32_t s = path[n], x = r->state_type[s];
            const int continued = n > off && (r->state_prefix[path[n - 1]] & FC_CHUNK_RUNS_ON) &&
                                  (r->state_prefix[s] & FC_CHUNK_RUNS_IN) && r->state_type[path[n - 1]] == x;
            if (continued) {
                chunk_last[m - 1] = n - off;
            } else if (x >= 0) {
                chunk_sentence[m] = i;
                chunk_first[m] = chunk_last[m] = n - off;
                chunk_type[m++] = x;
            }
        }
    }
    *count = m;
    return fc_chunk_probabilities(g, sc, b, r, m, chunk_sentence, chunk_first, chunk_last, chunk_type, probability,
                                  exact, work);
}

/* Sentence i's marks [T, 5K] (its token marginals summed by prefix set and type)
 * and expected number of chunks; 0 if a token's marginals have no mass. */
static int sentence_marks(const fc_graph *g, const fc_batch *linear, const fc_chunk_reading *r, chunk_work *w,
                          int64_t off, int64_t last, double *expected)
{
    const int32_t S = g->num_states, E = g->num_edges, K = r->num_types;
    const double *psi = linear->emit;
    double chunks = 0.0;
    for (int64_t n = off; n <= last; ++n) {
        const double *a = w->alpha + n * S, *bt = w->beta + n * S;
        double norm = 0.0;
        for (int32_t s = 0; s < S; ++s) norm += a[s] * bt[s];
        if (!(norm > 0.0) || !isfinite(norm)) return 0;
        double *mark = w->marks + n * 5 * K;
        for (int32_t c = 0; c < 5 * K; ++c) mark[c] = 0.0;
        for (int32_t s = 0; s < S; ++s) {
            const int32_t x = r->state_type[s];
            if (x < 0) continue;
            const double p = a[s] * bt[s] / norm;
            for (int32_t bit = 0; bit < 4; ++bit)
                if (r->state_prefix[s] & (1 << bit)) mark[bit * K + x] += p;
            mark[4 * K + x] += p;
        }
        if (n == off) {
            for (int32_t x = 0; x < K; ++x) chunks += mark[4 * K + x];
            continue;
        }
        /* the chunks begun at n: edges into a chunk's state that do not continue */
        const double *prev = w->alpha + (n - 1) * S, *weight = w->weight + trans_row(linear->token_class, n, E);
        double all = 0.0, begun = 0.0;
        for (int32_t j = 0; j < S; ++j) {
            double into = 0.0, fresh = 0.0;
            for (int32_t e = g->in_ptr[j]; e < g->in_ptr[j + 1]; ++e) {
                const double v = prev[g->in_src[e]] * weight[e];
                into += v;
                if (r->state_type[j] >= 0 && !r->continuing[e]) fresh += v;
            }
            const double q = psi[n * S + j] * bt[j];
            all += into * q;
            begun += fresh * q;
        }
        if (!(all > 0.0)) return 0;
        chunks += begun / all;
    }
    *expected = chunks;
    return 1;
}

/* Bounds of a chunk of type x at token n of a sentence off .. last (marks rows). */
static double begins_at(const chunk_work *w, int32_t K, int64_t off, int64_t n, int32_t x)
{
    const double *mark = w->marks + n * 5 * K;
    if (n == off) return mark[4 * K + x];
    const double before = 1.0 - w->marks[(n - 1) * 5 * K + K + x], runs_in = mark[x];
    return mark[2 * K + x] + (runs_in < before ? runs_in : before);
}

static double ends_at(const chunk_work *w, int32_t K, int64_t last, int64_t n, int32_t x)
{
    const double *mark = w->marks + n * 5 * K;
    if (n == last) return mark[4 * K + x];
    const double after = 1.0 - w->marks[(n + 1) * 5 * K + x], runs_on = mark[K + x];
    return mark[3 * K + x] + (runs_on < after ? runs_on : after);
}

int fc_chunk_candidates(const fc_graph *g, const fc_scores *sc, const fc_batch *b, const fc_chunk_reading *r,
                        double floor, int64_t capacity, int32_t *cand_sentence, int64_t *cand_first,
                        int64_t *cand_last, int32_t *cand_type, double *cand_probability, int64_t *count,
                        int32_t *exact, double *expected_chunks, double *work)
{
    if (check_reading(g, b, r) != FC_OK || capacity < 0) return FC_BAD_ARGUMENT;
    const int32_t K = r->num_types;
    const int64_t N = b->offsets[b->num_sequences];
    chunk_work w = carve(g, sc, b, K, work);
    fc_batch linear;
    make_tables(g, sc, b, &w, &linear, exact);
    const fc__span_tables t = span_tables(&w, r);
    int64_t found = 0;
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], last = b->offsets[i + 1] - 1;
        expected_chunks[i] = NAN;
        if (!exact[i]) continue;
        if (!sentence_marks(g, &linear, r, &w, off, last, &expected_chunks[i])) {
            exact[i] = 0;
            continue;
        }
        for (int64_t n = off; n <= last; ++n) {
            int64_t furthest = -1;
            for (int32_t x = 0; x < K; ++x) {
                w.reach[x] = -1;
                if (!(begins_at(&w, K, off, n, x) >= floor)) continue;
                int64_t reach = n; /* the chunk may run on while both sides of a link allow it */
                while (reach < last && w.marks[reach * 5 * K + K + x] >= floor &&
                       w.marks[(reach + 1) * 5 * K + x] >= floor)
                    ++reach;
                int64_t end = -1;
                for (int64_t e = n; e <= reach; ++e)
                    if (ends_at(&w, K, last, e, x) >= floor) end = e;
                if (end < 0) continue;
                w.reach[x] = end;
                furthest = end > furthest ? end : furthest;
                fc__span_pass(g, &linear, &t, off, last, w.log_z[i], x, n, end - n, w.passes + (int64_t)x * N,
                              w.mass);
            }
            for (int64_t e = n; e <= furthest; ++e)  /* by last token, then type */
                for (int32_t x = 0; x < K; ++x) {
                    if (e > w.reach[x] || !(ends_at(&w, K, last, e, x) >= floor)) continue;
                    const double p = w.passes[(int64_t)x * N + e - n];
                    if (!(p > floor)) continue;
                    if (found < capacity) {
                        cand_sentence[found] = i;
                        cand_first[found] = n - off;
                        cand_last[found] = e - off;
                        cand_type[found] = x;
                        cand_probability[found] = p;
                    }
                    ++found;
                }
        }
    }
    *count = found;
    return FC_OK;
}

int fc_finite_paths(const fc_graph *g, const fc_scores *sc, const fc_batch *b, const int32_t *path, int32_t *finite)
{
    const int32_t S = g->num_states, E = g->num_edges;
    if (b->num_sequences < 0 || b->offsets[0] != 0) return FC_BAD_ARGUMENT;
    for (int32_t i = 0; i < b->num_sequences; ++i)
        if (b->offsets[i + 1] <= b->offsets[i]) return FC_BAD_ARGUMENT;
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], last = b->offsets[i + 1] - 1;
        int ok = 1;
        for (int64_t n = off; ok && n <= last; ++n) ok = path[n] >= 0 && path[n] < S;
        ok = ok && isfinite(sc->start[path[off]]) && isfinite(sc->final[path[last]]);
        for (int64_t n = off; ok && n <= last; ++n) {
            ok = isfinite(b->emit[n * S + path[n]]);
            if (!ok || n == off) continue;
            const int32_t j = path[n], from = path[n - 1];
            int32_t edge = -1;
            for (int32_t e = g->in_ptr[j]; e < g->in_ptr[j + 1]; ++e)
                if (g->in_src[e] == from) edge = e;
            ok = edge >= 0 && isfinite(sc->trans[trans_row(b->token_class, n, E) + edge]);
        }
        finite[i] = ok;
    }
    return FC_OK;
}
