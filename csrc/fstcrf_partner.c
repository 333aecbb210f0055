/*
 * fstcrf_partner.c -- a partner thread for the bandit learner's small minibatches
 * (see the header).
 */
/* the blocking waits of fstcrf_portable.h, with what they need declared */
#define FC_THREAD_WAITS
#define _DEFAULT_SOURCE
#include "fstcrf_partner.h"
#include "fstcrf_internal.h"

/* Make the posted call. */
static int32_t make_call(const fb_partner *partner)
{
    if (partner->kind == FB_CALL_DRAW) {
        const fb_draw_call *c = &partner->draw;
        const fb_pieces *q = &c->pieces;
        return fb_draw(q->set, q->bounds, q->num_pieces, q->piece_begin, q->piece_end, c->sc, c->theta, c->sign,
                       c->seed, c->num_draws, c->offsets, c->emit, c->log_z, c->marg, c->edge_counts, c->paths,
                       c->ws, c->work, c->step_state, c->state_width);
    }
    if (partner->kind == FB_CALL_GRADIENT) {
        const fb_gradient_call *c = &partner->gradient;
        const fb_pieces *q = &c->pieces;
        return fb_gradient(q->set, q->bounds, q->num_pieces, q->piece_begin, q->piece_end, c->num_draws, c->coef,
                           c->paths, c->offsets, c->marg, c->sign, c->marks, c->layout, c->work, c->num_classes,
                           c->counts);
    }
    if (partner->kind == FB_CALL_STEP) {
        const fb_step_call *c = &partner->step;
        return fb_step(c->set, c->layout, c->begin, c->end, c->step, c->theta, c->state, c->transitions,
                       c->num_transitions, c->squares, c->moments);
    }
    if (partner->kind == FB_CALL_INDEX) {
        const fb_index_call *c = &partner->index;
        return fb_index(c->set, c->layout, c->piece_rows, c->num_pieces);
    }
    return FC_BAD_ARGUMENT;
}

int fb_partner_serve(fb_partner *partner)
{
    for (;;) {
        const int32_t flag = FC_LOAD_ACQUIRE(&partner->flag);
        if (flag == FB_PARTNER_STOP || FC_LOAD_ACQUIRE(&partner->stopping)) return FB_PARTNER_STOP;
        if (flag == FB_PARTNER_POSTED) {
            if (!FC_SWAP(&partner->flag, FB_PARTNER_POSTED, FB_PARTNER_RUNNING)) continue; /* the caller took it */
            partner->status = make_call(partner);
            if (!FC_SWAP(&partner->flag, FB_PARTNER_RUNNING, FB_PARTNER_DONE)) { /* the caller blocked */
                FC_STORE_RELEASE(&partner->flag, FB_PARTNER_DONE);
                fc_wake(&partner->flag);
            }
        } else {
            /* idle, or done: blocked until a post (or a stop) changes the flag and wakes it */
            fc_wait_while(&partner->flag, flag, -1);
        }
    }
}

/* Whether a call may be posted: none is posted or done and not collected, and the
 * partner is not stopping (only the caller's thread posts, so this stays true). */
static int may_post(fb_partner *partner)
{
    const int32_t flag = FC_LOAD_ACQUIRE(&partner->flag);
    return flag == FB_PARTNER_IDLE && !FC_LOAD_ACQUIRE(&partner->stopping);
}

/* Publish the call written in the partner and wake it (it blocks whenever idle). */
static int publish(fb_partner *partner, int32_t kind)
{
    partner->kind = kind;
    FC_STORE_RELEASE(&partner->flag, FB_PARTNER_POSTED); /* idle (may_post): only this thread changes it */
    fc_wake(&partner->flag);
    return FC_OK;
}

int fb_post_draw(fb_partner *partner, const fb_set *set, const int64_t *bounds, int32_t num_pieces,
                 int32_t piece_begin, int32_t piece_end, const fc_scores *sc, const double *theta, double sign,
                 uint64_t seed, int32_t num_draws, int64_t *offsets, double *emit, double *log_z, double *marg,
                 double *edge_counts, int32_t *paths, fc_workspace *ws, double *work, const double *step_state,
                 int32_t state_width)
{
    if (!may_post(partner)) return FC_BAD_ARGUMENT;
    const fb_pieces pieces = {set, bounds, num_pieces, piece_begin, piece_end};
    const fb_draw_call call = {pieces, sc,         theta, sign, seed,       num_draws,  offsets,
                               emit,   log_z,      marg,  edge_counts,      paths,      ws,
                               work,   step_state, state_width};
    partner->draw = call;
    return publish(partner, FB_CALL_DRAW);
}

int fb_post_gradient(fb_partner *partner, const fb_set *set, const int64_t *bounds, int32_t num_pieces,
                     int32_t piece_begin, int32_t piece_end, int32_t num_draws, const double *coef,
                     const int32_t *paths, const int64_t *offsets, const double *marg, double sign, double *marks,
                     const fb_layout *layout, double *work, int32_t num_classes, double *counts)
{
    if (!may_post(partner)) return FC_BAD_ARGUMENT;
    const fb_pieces pieces = {set, bounds, num_pieces, piece_begin, piece_end};
    const fb_gradient_call call = {pieces, num_draws, coef, paths, offsets, marg,
                                   sign, marks, layout, work, num_classes, counts};
    partner->gradient = call;
    return publish(partner, FB_CALL_GRADIENT);
}

int fb_post_step(fb_partner *partner, const fb_set *set, fb_layout *layout, int64_t begin, int64_t end,
                 const fu_step *step, double *theta, double *state, double *transitions, int64_t num_transitions,
                 double *squares, double *moments)
{
    if (!may_post(partner)) return FC_BAD_ARGUMENT;
    const fb_step_call call = {set, layout, begin, end, step, theta, state, transitions, num_transitions,
                               squares, moments};
    partner->step = call;
    return publish(partner, FB_CALL_STEP);
}

int fb_post_index(fb_partner *partner, const fb_set *set, fb_layout *layout, const int64_t *piece_rows,
                  int32_t num_pieces)
{
    if (!may_post(partner)) return FC_BAD_ARGUMENT;
    const fb_index_call call = {set, layout, piece_rows, num_pieces};
    partner->index = call;
    return publish(partner, FB_CALL_INDEX);
}

int fb_partner_wait(fb_partner *partner, int32_t milliseconds)
{
    int32_t spins = 0, blocked = 0;
    for (;;) {
        const int32_t flag = FC_LOAD_ACQUIRE(&partner->flag);
        if (flag == FB_PARTNER_DONE) {
            const int32_t status = partner->status;
            FC_STORE_RELEASE(&partner->flag, FB_PARTNER_IDLE); /* collected; the partner stays blocked */
            return status;
        }
        if (flag == FB_PARTNER_POSTED) {
            /* not taken: the partner is blocked or not running; this thread makes the call */
            if (FC_SWAP(&partner->flag, FB_PARTNER_POSTED, FB_PARTNER_IDLE)) return make_call(partner);
        } else if (flag != FB_PARTNER_RUNNING && flag != FB_PARTNER_WAITED) {
            return FC_BAD_ARGUMENT;
        } else if (flag == FB_PARTNER_RUNNING && ++spins <= FB_PARTNER_WAIT_SPINS) {
            FC_PAUSE();
        } else if (blocked) {
            return FB_PARTNER_BUSY;
        } else if (flag == FB_PARTNER_WAITED || FC_SWAP(&partner->flag, FB_PARTNER_RUNNING, FB_PARTNER_WAITED)) {
            fc_wait_while(&partner->flag, FB_PARTNER_WAITED, milliseconds); /* until the partner's wake */
            blocked = 1;
        }
    }
}

void fb_partner_stop(fb_partner *partner)
{
    FC_STORE_RELEASE(&partner->stopping, 1);
    for (;;) {
        const int32_t flag = FC_LOAD_ACQUIRE(&partner->flag);
        if (flag == FB_PARTNER_RUNNING || flag == FB_PARTNER_WAITED || flag == FB_PARTNER_STOP) break;
        if (FC_SWAP(&partner->flag, flag, FB_PARTNER_STOP)) break; /* else the partner changed it: look again */
    }
    fc_wake(&partner->flag); /* a blocked partner sees the stop (one making a call, after it) */
}
