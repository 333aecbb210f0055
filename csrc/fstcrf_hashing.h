/*
 * fstcrf_hashing.h -- 64-bit hashes for the predicate dictionary and the
 * checksum of model files.
 *
 * A predicate is named by its template and the values of the template's
 * observations.  Its key is a chain of hashes:
 *
 *     key = seed (the hash of the template's name)
 *     key = fh_mix(key ^ value hash)       for each observation, in order
 *
 * where a value hash is fh_string_hashes of the value's escaped UTF-8 text.
 * The dictionary is an open-addressing table (linear probing) of the keys of
 * the known predicates: slot i is slots[2i] = key, slots[2i+1] = column + 1,
 * or 0 in slots[2i+1] for an empty slot.  The capacity is a power of two.
 *
 * Conventions are those of fstcrf_kernel.h: C-contiguous arrays with shapes in
 * brackets, no globals, no allocation, every buffer owned by the caller.  The
 * caller validates shapes and ranges; the functions that could index out of
 * bounds on bad input check it and return FC_BAD_ARGUMENT before writing.
 */
#ifndef FSTCRF_HASHING_H
#define FSTCRF_HASHING_H

#include <stdint.h>

/* Returned by fh_build_table when two keys are equal (a hash collision). */
#define FH_DUPLICATE 3
/* Tokens looked up together by fh_predicate_rows, FH_GROUP templates at a time. */
#define FH_BLOCK 64
#define FH_GROUP 8

/* A bijective 64-bit mixer (the splitmix64 finaliser). */
uint64_t fh_mix(uint64_t x);

/* Checksum of `size` bytes: four independent lanes of 64 bits.
 *   digest [4]  OVERWRITTEN: the lanes, each mixed with the size.
 * Any change confined to one aligned 8-byte word changes the digest. */
void fh_checksum(const uint8_t *data, int64_t size, uint64_t *digest);

/* Hashes of n strings stored back to back.
 *   blob    [offsets[n]]  the strings' bytes
 *   offsets [n+1]         string i is blob[offsets[i] .. offsets[i+1]-1]
 *   hashes  [n]           OVERWRITTEN */
void fh_string_hashes(const uint8_t *blob, const int64_t *offsets, int64_t n, uint64_t salt,
                      uint64_t *hashes);

/* Hashes of the n lines of one text, as fh_string_hashes hashes them: a sentence's
 * column joined by newlines, hashed without the offsets of its values.
 *   text    [size]  the lines' bytes, each line but the last followed by one '\n'
 *   hashes  [n]     OVERWRITTEN
 * Returns FC_BAD_ARGUMENT, having written nothing, unless the text holds n lines. */
int fh_line_hashes(const uint8_t *text, int64_t size, int64_t n, uint64_t salt, uint64_t *hashes);

/* Kinds of fh_substring_hashes. */
#define FH_PREFIXES 0
#define FH_SUFFIXES 1
#define FH_SUBSTRINGS 2
/* The longest string fh_substring_hashes takes, in code points. */
#define FH_MAX_CODE_POINTS 64

/* Hashes of the distinct substrings of n UTF-8 strings of lengths low..high in
 * code points: the prefixes (kind FH_PREFIXES), the suffixes (FH_SUFFIXES) or
 * those at every position (FH_SUBSTRINGS), shortest first, then from the left.
 *   blob     [offsets[n]]  the strings' bytes, each at most FH_MAX_CODE_POINTS code points
 *   offsets  [n+1]
 *   ptr      [n+1]         OVERWRITTEN: string i's hashes are hashes[ptr[i] .. ptr[i+1]-1]
 *   hashes   [capacity]    OVERWRITTEN in its first ptr[n] entries (as fh_string_hashes)
 * Returns FC_BAD_ARGUMENT (outputs unspecified) for bad bounds or kind, a longer
 * string, or more than capacity substrings. */
int fh_substring_hashes(const uint8_t *blob, const int64_t *offsets, int64_t n, int32_t kind, int32_t low,
                        int32_t high, uint64_t salt, int64_t capacity, int64_t *ptr, uint64_t *hashes);

/* Transforms of fh_store_values: those of fstcrf.features.template, on ASCII text,
 * where a character's class is X (A-Z), x (a-z), d (0-9) or itself. */
#define FH_IDENTITY 0
#define FH_LOWER 1
#define FH_SHAPE 2          /* the classes, each run of one class written once */
#define FH_LONG_SHAPE 3     /* the classes */
#define FH_SHAPE2 4         /* up to 4 characters the classes, else the classes of the first two,
                               the distinct classes of the middle ascending, those of the last two */
#define FH_PREFIX 5         /* the first `length` characters (all of a shorter string) */
#define FH_SUFFIX 6         /* the last `length` characters */

/* Categories of the tables of fh_store_values, and the fields of a table:
 *   category, transform, length (of FH_PREFIX and FH_SUFFIX, else unread), marked,
 *   kind, low, high (of fh_substring_hashes; marked, kind, low and high read for lists
 *   only), place (the table's row of its category's array) */
#define FH_STORE_SINGLE 0
#define FH_STORE_LIST 1
#define FH_STORE_TEXT 2
#define FH_STORE_SEEN 3
#define FH_STORE_FIELDS 8

/* What a value store (fstcrf.features.hashing) keeps of n new ASCII strings, written
 * into its arrays at columns first .. first+n-1: for a single table, the hash of the
 * string's transform (as fh_string_hashes hashes it); for a list table, the hashes of the
 * distinct substrings of the transform, between the marks '<' and '>' if marked, as
 * fh_substring_hashes (kind, low, high) gives them; for a text table, the transform's
 * bytes; for a seen table, seen_marks[0] where the seen table holds the hash of the
 * transform lower-cased, else seen_marks[1] (into single, as a single table).
 *   text        [size]        the n strings, each but the last followed by one '\n'; each
 *                             ASCII but '\\', '|' and '_' (which escaping could change)
 *                             and at most FH_MAX_CODE_POINTS long (two fewer with marks)
 *   tables      [num_tables, FH_STORE_FIELDS]  place < the rows of the table's array
 *   single      [single_rows, stride]  OVERWRITTEN at single[place][first + i]
 *   list_span   [list_rows, stride, 2]  OVERWRITTEN likewise: string i's list is
 *                             list_hashes[span[0] .. span[1] - 1]
 *   list_hashes [list_capacity]  OVERWRITTEN from list_base on, in written[0] entries
 *   text_span, text_bytes     likewise, text_bytes from text_base on, in written[1] bytes
 *   seen_slots  [2 * seen_capacity]  a table of fh_build_table (capacity a power of two),
 *                             or NULL where no table is a seen table; seen_marks [2]
 *   written     [2]           OVERWRITTEN
 * Returns FC_BAD_ARGUMENT (outputs unspecified) for a byte it does not take, a longer
 * string, other than n strings, a bad table (a seen table without a seen table given),
 * columns past the stride or more than a capacity. */
int fh_store_values(const uint8_t *text, int64_t size, int64_t n, uint64_t salt, int32_t num_tables,
                    const int64_t *tables, int64_t first, int64_t stride, int64_t single_rows, uint64_t *single,
                    int64_t list_rows, int64_t *list_span, int64_t list_base, int64_t list_capacity,
                    uint64_t *list_hashes, int64_t text_rows, int64_t *text_span, int64_t text_base,
                    int64_t text_capacity, uint8_t *text_bytes, int64_t seen_capacity, const uint64_t *seen_slots,
                    const uint64_t *seen_marks, int64_t *written);

/* One link of the key chain for n keys: keys[i] = fh_mix(keys[i] ^ values[i]).
 *   keys [n] UPDATED, values [n] */
void fh_chain(uint64_t *keys, const uint64_t *values, int64_t n);

/* Fill an empty table with keys[c] -> column c.
 *   keys  [n]             distinct keys
 *   slots [2 * capacity]  OVERWRITTEN; capacity a power of two > n
 * Returns FH_DUPLICATE (table contents unspecified) if two keys are equal. */
int fh_build_table(const uint64_t *keys, int64_t n, int64_t capacity, uint64_t *slots);

/* Look keys up: columns[i] = the column of keys[i], or -1 if it is not in the table. */
void fh_lookup(const uint64_t *keys, int64_t n, int64_t capacity, const uint64_t *slots,
               int64_t *columns);

/* Number keys by first occurrence (a hash table instead of a sort):
 *   keys   [n]
 *   slots  [2 * capacity]  OVERWRITTEN (scratch); capacity a power of two > n
 *   codes  [n]  OVERWRITTEN: codes[i] = the number of distinct keys whose first
 *               occurrence comes before that of keys[i]
 *   first  [n]  OVERWRITTEN in its first K entries: where code k first occurs (ascending)
 *   counts [n]  OVERWRITTEN in its first K entries: how often code k occurs
 * Returns K, the number of distinct keys. */
int64_t fh_factorize(const uint64_t *keys, int64_t n, int64_t capacity, uint64_t *slots, int64_t *codes,
                     int64_t *first, int64_t *counts);

/* The value hash of observations at every token of a batch of sentences, as
 * fh_predicate_rows reads them.  Observation j reads source row source[j] at offset
 * offset[j] from each token; where that falls k tokens before the first token of the
 * sentence it reads the boundary value "__BOS-k__", k after the last "__EOS+k__",
 * hashed as fh_string_hashes hashes that text.
 *   sentence_offsets [B+1]  sentence i is tokens sentence_offsets[i] .. sentence_offsets[i+1]-1,
 *                           from 0 to N
 *   sources  [G, N]  the hash of each token's value in source g
 *   source   [J]     in [0, G)
 *   offset   [J]
 *   out      [J, N]  OVERWRITTEN
 * Returns FC_BAD_ARGUMENT if a source is out of range or the offsets do not cut the
 * N tokens into sentences, else FC_OK. */
int fh_window_hashes(int64_t num_tokens, int64_t num_sequences, const int64_t *sentence_offsets,
                     int32_t num_sources, const uint64_t *sources, int32_t num_observations,
                     const int32_t *source, const int64_t *offset, uint64_t salt, uint64_t *out);

/* The known predicates of a block of N tokens, in compressed sparse row form.
 *   value_hashes [J, N]  the value hash of observation j at token t
 *   seeds        [T]     the key seed of each predicate template
 *   item_ptr     [T+1]   template k reads observations items[item_ptr[k] .. item_ptr[k+1]-1]
 *   items        [I]     observation indices in [0, J)
 *   slots        [2 * capacity]  the table (see above)
 *   scratch      [FH_BLOCK, T]  OVERWRITTEN: the columns of a block of tokens
 *   indptr       [N+1]   OVERWRITTEN: row pointers
 *   indices      [N * T] OVERWRITTEN in its first indptr[N] entries: the columns of row t,
 *                        ascending, at indptr[t] .. indptr[t+1]-1
 * Returns FC_BAD_ARGUMENT if item_ptr or items are out of range, else FC_OK. */
int fh_predicate_rows(int64_t num_tokens, int32_t num_observations, const uint64_t *value_hashes,
                      int32_t num_templates, const uint64_t *seeds, const int32_t *item_ptr,
                      const int32_t *items, int64_t capacity, const uint64_t *slots,
                      int32_t *scratch, int64_t *indptr, int32_t *indices);

/* The known predicates of N tokens under each of K values of a column that their
 * lines read at the token itself (a lower tagger's label), in compressed sparse
 * row form: row t * K + k holds the columns of the R lines at token t when the
 * column takes value k, ascending (as fh_predicate_rows orders a row).
 *   value_hashes [J, N]  the value hash of observation j (of the other columns) at token t
 *   read_hashes  [V, K]  the value hash of read observation v under value k
 *   seeds        [R]     the key seed of each line
 *   item_ptr     [R+1]   line r reads observations items[item_ptr[r] .. item_ptr[r+1]-1]
 *   items        [I]     in [0, J + V): j < J an observation of value_hashes, else read
 *                        observation j - J
 *   slots        [2 * capacity]  the table (see above)
 *   keys         [R, K]  OVERWRITTEN (scratch)
 *   scratch      [R]     OVERWRITTEN (scratch)
 *   indptr       [N*K+1] OVERWRITTEN: row pointers
 *   indices      [N*K*R] OVERWRITTEN in its first indptr[N*K] entries
 * Returns FC_BAD_ARGUMENT if the sizes are negative or item_ptr or items are out of
 * range, else FC_OK. */
int fh_reading_rows(int64_t num_tokens, int32_t num_values, int32_t num_observations,
                    const uint64_t *value_hashes, int32_t num_read, const uint64_t *read_hashes,
                    int32_t num_lines, const uint64_t *seeds, const int32_t *item_ptr,
                    const int32_t *items, int64_t capacity, const uint64_t *slots, uint64_t *keys,
                    int32_t *scratch, int64_t *indptr, int32_t *indices);

#endif
