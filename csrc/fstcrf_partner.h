/*
 * fstcrf_partner.h -- a partner thread for the bandit learner's small minibatches.
 *
 * A minibatch of a few hundred tokens takes a few hundred microseconds of work, cut
 * into two pieces (fstcrf_bandit.h); handing a piece to a pool thread through a lock
 * and a wake-up costs a good part of that.  Here the caller runs fb_partner_serve
 * on a thread of its own, which waits for calls by spinning on a flag, and hands it
 * one fb_draw, fb_gradient, fb_step or fb_index call at a time with fb_post_draw,
 * fb_post_gradient, fb_post_step or fb_post_index, runs its own piece (or other
 * work) meanwhile and collects the
 * status with fb_partner_wait: a hand-over costs about a microsecond.  The partner
 * spins for FB_PARTNER_SPINS pauses at most, then parks: fb_partner_serve returns
 * FB_PARTNER_PARKED and the caller must wake it (call fb_partner_serve again) once
 * a post says so.  The results are the called function's, on whichever thread it runs.
 */
#ifndef FSTCRF_PARTNER_H
#define FSTCRF_PARTNER_H

#include <stdint.h>

#include "fstcrf_bandit.h"

/* The flag's values. */
#define FB_PARTNER_IDLE 0   /* spinning, no call posted */
#define FB_PARTNER_POSTED 1 /* a call is posted */
#define FB_PARTNER_DONE 2   /* the call is done, its status in `status` */
#define FB_PARTNER_PARKED 3 /* not spinning: fb_partner_serve returned */
#define FB_PARTNER_STOP 4   /* fb_partner_serve returns and is not to be called again */

/* Pauses a partner spins through before it parks (some milliseconds). */
#define FB_PARTNER_SPINS 200000

/* The calls a partner makes. */
#define FB_CALL_DRAW 0
#define FB_CALL_GRADIENT 1
#define FB_CALL_STEP 2
#define FB_CALL_INDEX 3

/* The first five arguments of fb_draw and fb_gradient: which pieces of which
 * minibatch of which set. */
typedef struct {
    const fb_set *set;
    const int64_t *bounds;
    int32_t num_pieces;
    int32_t piece_begin;
    int32_t piece_end;
} fb_pieces;

/* fb_draw's arguments. */
typedef struct {
    fb_pieces pieces;
    const fc_scores *sc;
    const double *theta;
    double sign;
    uint64_t seed;
    int32_t num_draws;
    int64_t *offsets;
    double *emit;
    double *log_z;
    double *marg;
    double *edge_counts;
    int32_t *paths;
    fc_workspace *ws;
    double *work;
    const double *step_state;
    int32_t state_width;
} fb_draw_call;

/* fb_gradient's arguments. */
typedef struct {
    fb_pieces pieces;
    int32_t num_draws;
    const double *coef;
    const int32_t *paths;
    const int64_t *offsets;
    const double *marg;
    double sign;
    double *marks;
    const fb_layout *layout;
    double *work;
    int32_t num_classes;
    double *counts;
} fb_gradient_call;

/* fb_step's arguments. */
typedef struct {
    const fb_set *set;
    fb_layout *layout;
    int64_t begin;
    int64_t end;
    const fu_step *step;
    double *theta;
    double *state;
    double *transitions;
    int64_t num_transitions;
    double *squares;
    double *moments;
} fb_step_call;

/* fb_index's arguments. */
typedef struct {
    const fb_set *set;
    fb_layout *layout;
    const int64_t *piece_rows;
    int32_t num_pieces;
} fb_index_call;

/* A partner: its flag (read and written atomically), the posted call and its status.
 * Both threads spin on the flag, so it has a cache line of its own when the struct
 * starts one (FB_PARTNER_ALIGN): nothing else written there sends the line back and
 * forth between the cores. */
#define FB_PARTNER_ALIGN 64
typedef struct {
    int32_t flag;
    int32_t flag_line[15]; /* unused: the rest of the flag's line of FB_PARTNER_ALIGN bytes */
    int32_t kind;
    int32_t status;
    fb_draw_call draw;
    fb_gradient_call gradient;
    fb_step_call step;
    fb_index_call index;
} fb_partner;

/* Make the calls posted to the partner, spinning between them, until it is stopped
 * (returns FB_PARTNER_STOP) or has spun FB_PARTNER_SPINS pauses with nothing posted
 * (returns FB_PARTNER_PARKED).  One thread at a time. */
int fb_partner_serve(fb_partner *partner);

/* Post a call of fb_draw, fb_gradient, fb_step or fb_index with these arguments (which must
 * stay valid, and untouched by the caller where the call writes, until
 * fb_partner_wait).  Returns FB_PARTNER_IDLE (the spinning partner has it),
 * FB_PARTNER_PARKED (posted, but the partner must be woken: fb_partner_serve on its
 * thread), or FC_BAD_ARGUMENT, posting nothing, if a call is posted and not waited
 * for or the partner is stopped. */
int fb_post_draw(fb_partner *partner, const fb_set *set, const int64_t *bounds, int32_t num_pieces,
                 int32_t piece_begin, int32_t piece_end, const fc_scores *sc, const double *theta, double sign,
                 uint64_t seed, int32_t num_draws, int64_t *offsets, double *emit, double *log_z, double *marg,
                 double *edge_counts, int32_t *paths, fc_workspace *ws, double *work, const double *step_state,
                 int32_t state_width);
int fb_post_gradient(fb_partner *partner, const fb_set *set, const int64_t *bounds, int32_t num_pieces,
                     int32_t piece_begin, int32_t piece_end, int32_t num_draws, const double *coef,
                     const int32_t *paths, const int64_t *offsets, const double *marg, double sign, double *marks,
                     const fb_layout *layout, double *work, int32_t num_classes, double *counts);
int fb_post_step(fb_partner *partner, const fb_set *set, fb_layout *layout, int64_t begin, int64_t end,
                 const fu_step *step, double *theta, double *state, double *transitions, int64_t num_transitions,
                 double *squares, double *moments);
int fb_post_index(fb_partner *partner, const fb_set *set, fb_layout *layout, const int64_t *piece_rows,
                  int32_t num_pieces);

/* Spin until the posted call is done, and return its status (FC_BAD_ARGUMENT if none
 * was posted). */
int fb_partner_wait(fb_partner *partner);

/* Stop the partner once any posted call is done: fb_partner_serve returns
 * FB_PARTNER_STOP (at once if it is parked; the caller then need not wake it). */
void fb_partner_stop(fb_partner *partner);

#endif
