/*
 * fstcrf_partner.h -- a partner thread for the bandit learner's small minibatches.
 *
 * A minibatch of a few hundred tokens takes a few hundred microseconds of work, cut
 * into two pieces (fstcrf_bandit.h); handing a piece to a pool thread through a lock
 * and a wake-up costs a good part of that.  Here the caller runs fb_partner_serve
 * on a thread of its own, which waits for calls on a flag, and hands it one fb_draw,
 * fb_gradient, fb_step or fb_index call at a time with fb_post_draw, fb_post_gradient,
 * fb_post_step or fb_post_index, runs its own piece (or other work) meanwhile and
 * collects the status with fb_partner_wait: a hand-over costs the caller a wake-up
 * call (a system call of a microsecond or two) and no lock.
 *
 * The partner never spins: it blocks in the kernel (fc_wait_while of
 * fstcrf_portable.h: a futex, WaitOnAddress) whenever it holds no call, and each post
 * wakes it, its wake-up passing while the caller makes its own piece; right after a
 * call it blocks again, so between the calls of a minibatch (the caller's Python
 * work, the feedback) and between minibatches it uses no CPU.  A call the partner
 * has not taken when the caller waits for it (the partner not woken yet, or
 * not given a core) the caller makes itself, so a late partner never costs more than one
 * thread would.  The caller's wait for a call taken spins FB_PARTNER_WAIT_SPINS pauses,
 * then blocks too, and returns FB_PARTNER_BUSY after some milliseconds without the
 * result, so that its thread can see signals before it waits again.  fb_partner_stop
 * ends fb_partner_serve, after the call it is making if any.  The results are the
 * called function's, on whichever thread it runs.
 */
#ifndef FSTCRF_PARTNER_H
#define FSTCRF_PARTNER_H

#include <stdint.h>

#include "fstcrf_bandit.h"

/* The flag's values (fb_partner_serve and fb_partner_wait return some of them). */
#define FB_PARTNER_IDLE 0    /* no call posted; the partner is blocked */
#define FB_PARTNER_POSTED 1  /* a call is posted, not taken yet */
#define FB_PARTNER_DONE 2    /* the call is done, its status in `status`; the partner is blocked */
#define FB_PARTNER_STOP 4    /* fb_partner_serve returns and is not to be called again */
#define FB_PARTNER_WAITED 5  /* the partner is making the call and the caller is blocked waiting for it */
#define FB_PARTNER_BUSY 7    /* fb_partner_wait: the call is not done yet, wait again */
#define FB_PARTNER_RUNNING 8 /* the partner is making the posted call */

/* Pauses the caller spins through in fb_partner_wait before it blocks: about the
 * partner's wake-up (tens of microseconds; a pause takes 28 to 55 ns on AMD EPYC
 * cores, 140 on recent Intel ones), by which a piece taken late ends after the
 * caller's; longer waits (the partner held up) block, using no CPU. */
#define FB_PARTNER_WAIT_SPINS 2000

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

/* A partner: its flag (read and written atomically, and the word both threads block
 * on), whether it is stopping, the posted call and its status.  The caller spins on
 * the flag while the partner makes a call, so it has a cache line of its own when the struct starts one
 * (FB_PARTNER_ALIGN): nothing else written there sends the line back and forth
 * between the cores (`stopping` is written once). */
#define FB_PARTNER_ALIGN 64
typedef struct {
    int32_t flag;
    int32_t stopping;      /* 1 once fb_partner_stop was called */
    int32_t flag_line[14]; /* unused: the rest of the flag's line of FB_PARTNER_ALIGN bytes */
    int32_t kind;
    int32_t status;
    fb_draw_call draw;
    fb_gradient_call gradient;
    fb_step_call step;
    fb_index_call index;
} fb_partner;

/* Make the calls posted to the partner, blocked between them, until it is stopped
 * (returns FB_PARTNER_STOP).  One thread at a time, and once. */
int fb_partner_serve(fb_partner *partner);

/* Post a call of fb_draw, fb_gradient, fb_step or fb_index with these arguments (which must
 * stay valid, and untouched by the caller where the call writes, until
 * fb_partner_wait returns its status), waking the partner.  Returns
 * FC_OK, or FC_BAD_ARGUMENT, posting nothing, if a call is posted and not collected or
 * the partner is stopping. */
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

/* The status of the posted call once it is done (spinning, then blocked), or
 * FB_PARTNER_BUSY if it is not done after about `milliseconds` more (or a signal
 * came): call again to go on waiting.  FC_BAD_ARGUMENT if no call was posted. */
int fb_partner_wait(fb_partner *partner, int32_t milliseconds);

/* Stop the partner: fb_partner_serve returns FB_PARTNER_STOP at once, or after the call
 * it is making.  Does not wait; no call can be posted after it. */
void fb_partner_stop(fb_partner *partner);

#endif
