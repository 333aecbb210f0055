/*
 * fstcrf_conll.h -- CoNLL column files scanned and written in C.
 *
 * A CoNLL file is UTF-8 text, lines ending in "\n": a token line holds the
 * fields of one token, a blank line (nothing but " \t\r\f\v") ends a
 * sentence, and a line whose first field is -DOCSTART- starts a document (it
 * also ends a sentence).  Fields are split either at runs of " \t\r\f\v"
 * around a stripped line (no separator given), or at each occurrence of a
 * separator string in the line without its trailing "\r"s; in the second
 * layout a field may be empty, which is an error.  These are the rules of
 * fstcrf.corpus.conll (the Python reader), byte for byte.
 *
 * fl_scan turns a buffer of lines into sentence records and the fields of
 * their tokens, each field followed by "\n" (so that the caller splits the
 * lot into strings at once); fl_format writes sentences back, the fields of
 * each token joined by a separator, extra columns after them.
 *
 * Conventions are those of fstcrf_kernel.h: C-contiguous arrays with shapes
 * in brackets, no globals, no allocation, every buffer owned by the caller.
 */
#ifndef FSTCRF_CONLL_H
#define FSTCRF_CONLL_H

#include <stdint.h>

/* Statuses (FC_OK, 0, is success). */
#define FL_BAD_UTF8 11    /* fl_scan: a line that is not UTF-8 (result->error_line) */
#define FL_BAD_FIELDS 12  /* fl_scan: a token line with an empty field or another field count than
                             the first token line's, reported at the end of its sentence */
#define FL_BAD_FIELD 13   /* fl_format: a field that is empty or holds a separator, a line break
                             (or, with a space separator, any of " \t\r\f\v"), or a first field
                             that is -DOCSTART-; nothing is promised of the output */
#define FL_NO_ROOM 14     /* fl_format: the output buffer is too small */

/* What fl_scan found. */
typedef struct {
    int32_t num_fields;       /* IN: the fields of every token line, 0 if not known yet;
                                 OUT: that count, taken from the first token line if it was 0
                                 (0 again if that line is in the sentence left unfinished) */
    int64_t first_token_line; /* OUT: the line num_fields was taken from, -1 if it was given */
    int64_t lines;            /* OUT: lines consumed (those of the records below) */
    int64_t bytes;            /* OUT: bytes consumed */
    int64_t sentences;        /* OUT: sentence records written */
    int64_t docstarts;        /* OUT: -DOCSTART- records written */
    int64_t field_bytes;      /* OUT: bytes of fields written */
    int64_t error_line;       /* OUT: the offending line of FL_BAD_UTF8 and FL_BAD_FIELDS */
    int64_t open_line;        /* OUT: after an error, the first line of the sentence it stopped
                                 in, -1 if none */
    int32_t error_field;      /* OUT: FL_BAD_FIELDS: the first empty field (from 1), else 0 */
    int32_t error_count;      /* OUT: FL_BAD_FIELDS: the fields of error_line */
} fl_scan_result;

/* Scan the lines of data [size] (lines are numbered from 0 here).
 *   final              1 if the data ends the file (its last sentence ends with it); else
 *                      the sentence that the data ends in is left unconsumed
 *   separator [n]      the field separator, n bytes; n == 0 for runs of whitespace
 *   sentence_line  [C] OUT: the first line of each sentence
 *   sentence_tokens [C] OUT: its tokens (lines)
 *   sentence_end   [C] OUT: where its fields end in `fields`
 *   docstart_start [C] OUT: where each -DOCSTART- line starts in data
 *   docstart_end   [C] OUT: where it ends, without its trailing "\r"s
 *   docstart_before [C] OUT: the sentence records written before it
 *   fields  [size + C] OUT: the fields of the sentences' tokens, each followed by "\n"
 * with C at least the number of lines of data.  Returns FC_OK, FL_BAD_UTF8 or
 * FL_BAD_FIELDS; the records written before an error are whole and valid. */
int fl_scan(const uint8_t *data, int64_t size, int32_t final, const uint8_t *separator,
            int32_t separator_length, int64_t *sentence_line, int64_t *sentence_tokens,
            int64_t *sentence_end, int64_t *docstart_start, int64_t *docstart_end,
            int64_t *docstart_before, uint8_t *fields, fl_scan_result *result);

/* Write B sentences as CoNLL lines into out [capacity].
 *   lengths [B]            the tokens of each sentence (N in all)
 *   rows [rows_size]       the first K fields of every token, token after token, each
 *                          field followed by "\n" (K may be 0)
 *   columns [columns_size] E more columns of N values each, every value followed by "\n"
 *   column_cursors [E]     UPDATED: where each column's next value starts in columns
 *                          (on entry, where the column starts)
 *   docstarts [docstarts_size]  -DOCSTART- lines, each followed by "\n"
 *   docstarts_before [B+1] how many of them come before sentence b (cumulative; the
 *                          last entry counts them all, those after the last sentence too)
 *   padding [P]            written after each -DOCSTART- line
 *   separator [S]          written between the fields of a token
 * Every line ends in "\n", and a blank line follows every sentence and every
 * -DOCSTART- line.  *written = the bytes written.  Returns FC_OK, FL_BAD_FIELD
 * or FL_NO_ROOM. */
int fl_format(int64_t num_sentences, const int64_t *lengths, int32_t num_row_fields,
              const uint8_t *rows, int64_t rows_size, int32_t num_columns, const uint8_t *columns,
              int64_t columns_size, int64_t *column_cursors, const uint8_t *docstarts,
              int64_t docstarts_size, const int64_t *docstarts_before, const uint8_t *padding,
              int32_t padding_length, const uint8_t *separator, int32_t separator_length,
              uint8_t *out, int64_t capacity, int64_t *written);

#endif
