/* test_random2.c - the random2 ops give TensorFlow 2.21's CPU numbers bit for bit:
   RandomUniformInt, RandomShuffle, Multinomial (seed/seed2 attrs, runs 1 and 2 of a session),
   the V1 stateless ops (seed pair), the V2 stateless ops (key, counter, alg 1 and 3),
   StatelessMultinomial and StatelessRandomGetKeyCounter/GetAlg/GetKeyCounterAlg, for float,
   double, half, bfloat16 and the int types, small shapes and 100003 elements. The table below is
   written by tests/graphdef/make_random2_fixtures.py from TensorFlow's outputs: per case the first
   three and last two elements' bit patterns and a checksum of all of them, sum of
   bits(i) * (i + 1) mod 2^64. Bad inputs give InvalidArgument naming the node. Public API only. */
#include "harness.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const char *op;
    int dtype, ltype, rank;
    int32_t dims[3];
    long long s0, s1;            /* seed pair (V1, StatelessMultinomial) or seed/seed2 attrs (stateful) */
    int seed32;                  /* the seed pair as int32 */
    unsigned long long key, c0, c1;
    int alg;
    unsigned long long lo, hi;   /* minval/maxval (bits, two's complement); Multinomial: lo = num_samples */
    uint64_t sum1, sum2;         /* checksums of runs 1 and 2 (stateless: equal) */
    uint64_t first[3], last[2];
} rcase;

static const rcase cases[] = {
/* ---- generated: begin ---- */
    {"StatelessRandomUniform", DF_FLOAT, DF_FLOAT, 1, {7, 0, 0}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x6d78a47c4ull, 0x6d78a47c4ull, {0x3f581458ull, 0x3e44a788ull, 0x3f7f087cull}, {0x3f263b8aull, 0x3ddb05b0ull}},
    {"StatelessRandomUniform", DF_FLOAT, DF_FLOAT, 3, {2, 3, 5}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x71b5b6bf92ull, 0x71b5b6bf92ull, {0x3f581458ull, 0x3e44a788ull, 0x3f7f087cull}, {0x3f141b5cull, 0x3dbbf0d0ull}},
    {"StatelessRandomUniform", DF_FLOAT, DF_FLOAT, 1, {7, 0, 0}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x6e13206aeull, 0x6e13206aeull, {0x3eda262cull, 0x3f7aa954ull, 0x3f197110ull}, {0x3f7412beull, 0x3de222d0ull}},
    {"StatelessRandomUniform", DF_FLOAT, DF_FLOAT, 3, {2, 3, 5}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x7246d12376ull, 0x7246d12376ull, {0x3eda262cull, 0x3f7aa954ull, 0x3f197110ull}, {0x3f13fb74ull, 0x3f01babaull}},
    {"StatelessRandomUniform", DF_FLOAT, DF_FLOAT, 1, {7, 0, 0}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x6e9013a58ull, 0x6e9013a58ull, {0x3e581470ull, 0x3f34bd12ull, 0x3f4cd0f4ull}, {0x3f5ecfe0ull, 0x3f4ee560ull}},
    {"StatelessRandomUniform", DF_FLOAT, DF_FLOAT, 3, {2, 3, 5}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x719b562c74ull, 0x719b562c74ull, {0x3e581470ull, 0x3f34bd12ull, 0x3f4cd0f4ull}, {0x3d40f3c0ull, 0x3f2e6ac8ull}},
    {"StatelessRandomUniform", DF_FLOAT, DF_FLOAT, 1, {100003, 0, 0}, 17ll, 3ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x490e827145f533f2ull, 0x490e827145f533f2ull, {0x3ef32db0ull, 0x3f3d2deeull, 0x3e921d20ull}, {0x3f2a751aull, 0x3dd3f420ull}},
    {"StatelessRandomUniform", DF_DOUBLE, DF_FLOAT, 1, {7, 0, 0}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xfce78a6c990ccb54ull, 0xfce78a6c990ccb54ull, {0x3fe81458cf3129e2ull, 0x3fef087c2c290f26ull, 0x3fc6849f8a98ee28ull}, {0x3fe372a5bf23a328ull, 0x3fea77afee2ccf48ull}},
    {"StatelessRandomUniform", DF_DOUBLE, DF_FLOAT, 3, {2, 3, 5}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x4f8f7e49dc61cb2ull, 0x4f8f7e49dc61cb2ull, {0x3fe81458cf3129e2ull, 0x3fef087c2c290f26ull, 0x3fc6849f8a98ee28ull}, {0x3fe7227ab527c5feull, 0x3fecf29a49952ffcull}},
    {"StatelessRandomUniform", DF_DOUBLE, DF_FLOAT, 1, {7, 0, 0}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xfd79b033626a50b2ull, 0xfd79b033626a50b2ull, {0x3fda262e41f552a8ull, 0x3fe97111747e1560ull, 0x3fefa24efaf412beull}, {0x3fee3e5cbc5bbeacull, 0x3fdce40fba92a76cull}},
    {"StatelessRandomUniform", DF_DOUBLE, DF_FLOAT, 3, {2, 3, 5}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xff6363473ba50446ull, 0xff6363473ba50446ull, {0x3fda262e41f552a8ull, 0x3fe97111747e1560ull, 0x3fefa24efaf412beull}, {0x3fe11dbf120f0c28ull, 0x3fd64a796731469cull}},
    {"StatelessRandomUniform", DF_DOUBLE, DF_FLOAT, 1, {7, 0, 0}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xfba60535edac5854ull, 0xfba60535edac5854ull, {0x3fe6051d41b4bd12ull, 0x3fd9a1eaaf8aa548ull, 0x3fbbd465bef67f00ull}, {0x3fb6b3c758e3bb30ull, 0x3fef41c2e9328690ull}},
    {"StatelessRandomUniform", DF_DOUBLE, DF_FLOAT, 3, {2, 3, 5}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xf0f78f1381811a5cull, 0xf0f78f1381811a5cull, {0x3fe6051d41b4bd12ull, 0x3fd9a1eaaf8aa548ull, 0x3fbbd465bef67f00ull}, {0x3fcf205b99a32940ull, 0x3fe59c1467dd2c40ull}},
    {"StatelessRandomUniform", DF_DOUBLE, DF_FLOAT, 1, {100003, 0, 0}, 17ll, 3ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x233654fe58edef60ull, 0x233654fe58edef60ull, {0x3fe996d876bd2deeull, 0x3fd21d20006afce4ull, 0x3fb987292a7650f0ull}, {0x3fd14daef737b4c8ull, 0x3fee5ec0e756e34cull}},
    {"StatelessRandomUniform", DF_HALF, DF_FLOAT, 1, {7, 0, 0}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x58c80ull, 0x58c80ull, {0x3858ull, 0x3388ull, 0x2bc0ull}, {0x3714ull, 0x2db0ull}},
    {"StatelessRandomUniform", DF_HALF, DF_FLOAT, 3, {2, 3, 5}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x5f7d00ull, 0x5f7d00ull, {0x3858ull, 0x3388ull, 0x2bc0ull}, {0x36b8ull, 0x3a1aull}},
    {"StatelessRandomUniform", DF_HALF, DF_FLOAT, 1, {7, 0, 0}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x5e176ull, 0x5e176ull, {0x362cull, 0x3150ull, 0x3040ull}, {0x357cull, 0x385aull}},
    {"StatelessRandomUniform", DF_HALF, DF_FLOAT, 3, {2, 3, 5}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x6400b0ull, 0x6400b0ull, {0x362cull, 0x3150ull, 0x3040ull}, {0x36e8ull, 0x3574ull}},
    {"StatelessRandomUniform", DF_HALF, DF_FLOAT, 1, {7, 0, 0}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x61198ull, 0x61198ull, {0x391cull, 0x3912ull, 0x2fa0ull}, {0x3be0ull, 0x3960ull}},
    {"StatelessRandomUniform", DF_HALF, DF_FLOAT, 3, {2, 3, 5}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x61957eull, 0x61957eull, {0x391cull, 0x3912ull, 0x2fa0ull}, {0x3b3cull, 0x3590ull}},
    {"StatelessRandomUniform", DF_HALF, DF_FLOAT, 1, {100003, 0, 0}, 17ll, 3ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x3ed6ecd3363eull, 0x3ed6ecd3363eull, {0x3ad8ull, 0x39eeull, 0x3a90ull}, {0x391aull, 0x3a84ull}},
    {"StatelessRandomUniform", DF_BFLOAT16, DF_FLOAT, 1, {7, 0, 0}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x6ddeaull, 0x6ddeaull, {0x3eb0ull, 0x3f62ull, 0x3ef8ull}, {0x3f0aull, 0x3f36ull}},
    {"StatelessRandomUniform", DF_BFLOAT16, DF_FLOAT, 3, {2, 3, 5}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x71e10eull, 0x71e10eull, {0x3eb0ull, 0x3f62ull, 0x3ef8ull}, {0x3eb8ull, 0x3dd0ull}},
    {"StatelessRandomUniform", DF_BFLOAT16, DF_FLOAT, 1, {7, 0, 0}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x6d9ecull, 0x6d9ecull, {0x3db0ull, 0x3ea8ull, 0x3d80ull}, {0x3f3eull, 0x3eb4ull}},
    {"StatelessRandomUniform", DF_BFLOAT16, DF_FLOAT, 3, {2, 3, 5}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x71fcc6ull, 0x71fcc6ull, {0x3db0ull, 0x3ea8ull, 0x3d80ull}, {0x3ee8ull, 0x3f3aull}},
    {"StatelessRandomUniform", DF_BFLOAT16, DF_FLOAT, 1, {7, 0, 0}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x6e2a8ull, 0x6e2a8ull, {0x3de0ull, 0x3d90ull, 0x3f74ull}, {0x3f60ull, 0x3ec0ull}},
    {"StatelessRandomUniform", DF_BFLOAT16, DF_FLOAT, 3, {2, 3, 5}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x722230ull, 0x722230ull, {0x3de0ull, 0x3d90ull, 0x3f74ull}, {0x3e70ull, 0x3f48ull}},
    {"StatelessRandomUniform", DF_BFLOAT16, DF_FLOAT, 1, {100003, 0, 0}, 17ll, 3ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x487c53f46ea2ull, 0x487c53f46ea2ull, {0x3f58ull, 0x3f6eull, 0x3f10ull}, {0x3dd0ull, 0x3f04ull}},
    {"StatelessRandomNormal", DF_FLOAT, DF_FLOAT, 1, {7, 0, 0}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xc5fcf49e6ull, 0xc5fcf49e6ull, {0x3f0b4acdull, 0x3e545b81ull, 0x3d96a8e4ull}, {0xbf742ff1ull, 0x3f577b86ull}},
    {"StatelessRandomNormal", DF_FLOAT, DF_FLOAT, 3, {2, 3, 5}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xc72d5c4924ull, 0xc72d5c4924ull, {0x3f0b4acdull, 0x3e545b81ull, 0x3d96a8e4ull}, {0x3f120241ull, 0x3f608564ull}},
    {"StatelessRandomNormal", DF_FLOAT, DF_FLOAT, 1, {7, 0, 0}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xf5e038d7eull, 0xf5e038d7eull, {0xbe2ec31bull, 0x3fa5c454ull, 0x3d42dde9ull}, {0x3f3a89c4ull, 0xbec7f031ull}},
    {"StatelessRandomNormal", DF_FLOAT, DF_FLOAT, 3, {2, 3, 5}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xe559233b00ull, 0xe559233b00ull, {0xbe2ec31bull, 0x3fa5c454ull, 0x3d42dde9ull}, {0xbd35f8e6ull, 0xbf85e498ull}},
    {"StatelessRandomNormal", DF_FLOAT, DF_FLOAT, 1, {7, 0, 0}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xc6605f0d1ull, 0xc6605f0d1ull, {0xbfd93869ull, 0xbef67702ull, 0xbf29885cull}, {0x3f718784ull, 0x3f1ddfb5ull}},
    {"StatelessRandomNormal", DF_FLOAT, DF_FLOAT, 3, {2, 3, 5}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xb942f6914cull, 0xb942f6914cull, {0xbfd93869ull, 0xbef67702ull, 0xbf29885cull}, {0xc00fb3a3ull, 0xbf845936ull}},
    {"StatelessRandomNormal", DF_FLOAT, DF_FLOAT, 1, {100003, 0, 0}, 17ll, 3ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x943c95cc0aa748a0ull, 0x943c95cc0aa748a0ull, {0xbf9bd205ull, 0xbdacde9full, 0x3fc400b0ull}, {0xbf9b2e2full, 0x3ea287bbull}},
    {"StatelessRandomNormal", DF_DOUBLE, DF_FLOAT, 1, {7, 0, 0}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x7d88062fe95802a1ull, 0x7d88062fe95802a1ull, {0xbfc23745fceed393ull, 0x3fe7b30df7adce2eull, 0xbff7813821086c87ull}, {0xbfecbe32b640db75ull, 0x3fe33624a9899bf6ull}},
    {"StatelessRandomNormal", DF_DOUBLE, DF_FLOAT, 3, {2, 3, 5}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x8c9231281ea9dca0ull, 0x8c9231281ea9dca0ull, {0xbfc23745fceed393ull, 0x3fe7b30df7adce2eull, 0xbff7813821086c87ull}, {0xbfdd1442a7084033ull, 0x3fe548850dbccfceull}},
    {"StatelessRandomNormal", DF_DOUBLE, DF_FLOAT, 1, {7, 0, 0}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xf9d7925cce3bb162ull, 0xf9d7925cce3bb162ull, {0xbff48e2cab6fb536ull, 0x3fd7eab57ad20190ull, 0xbfb9fad4bb2ea821ull}, {0x3fc77c3bc05fe23aull, 0xbfd938378dbee88cull}},
    {"StatelessRandomNormal", DF_DOUBLE, DF_FLOAT, 3, {2, 3, 5}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x54c5ae880020c45ull, 0x54c5ae880020c45ull, {0xbff48e2cab6fb536ull, 0x3fd7eab57ad20190ull, 0xbfb9fad4bb2ea821ull}, {0x3fed2f34acb5895full, 0xbfe4bad71f77ae19ull}},
    {"StatelessRandomNormal", DF_DOUBLE, DF_FLOAT, 1, {7, 0, 0}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x7c2b8a84a404a93full, 0x7c2b8a84a404a93full, {0x3fe030fa118559cfull, 0xbfe66f81327f2828ull, 0x3fdcff803a5d5c1aull}, {0x3fe2706ab61eca0full, 0xbfc5293f72cdd680ull}},
    {"StatelessRandomNormal", DF_DOUBLE, DF_FLOAT, 3, {2, 3, 5}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x1339fe0694494275ull, 0x1339fe0694494275ull, {0x3fe030fa118559cfull, 0xbfe66f81327f2828ull, 0x3fdcff803a5d5c1aull}, {0xbff7ff3994d52fcaull, 0xbfe856da5990d532ull}},
    {"StatelessRandomNormal", DF_DOUBLE, DF_FLOAT, 1, {100003, 0, 0}, 17ll, 3ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xfde545e130a9e1e2ull, 0xfde545e130a9e1e2ull, {0x3fe4f045229c9071ull, 0xbfc1a26b02152bd0ull, 0x400065fcbc9d15ecull}, {0xbfb8100cc5959a8eull, 0xbfbc26c64ac93dd3ull}},
    {"StatelessRandomNormal", DF_HALF, DF_FLOAT, 1, {7, 0, 0}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xb7e7aull, 0xb7e7aull, {0x385aull, 0x32a3ull, 0x2cb5ull}, {0xbba1ull, 0x3abcull}},
    {"StatelessRandomNormal", DF_HALF, DF_FLOAT, 3, {2, 3, 5}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xbc2ad3ull, 0xbc2ad3ull, {0x385aull, 0x32a3ull, 0x2cb5ull}, {0x3890ull, 0x3b04ull}},
    {"StatelessRandomNormal", DF_HALF, DF_FLOAT, 1, {7, 0, 0}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xe701eull, 0xe701eull, {0xb176ull, 0x3d2eull, 0x2a17ull}, {0x39d4ull, 0xb640ull}},
    {"StatelessRandomNormal", DF_HALF, DF_FLOAT, 3, {2, 3, 5}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xd8094aull, 0xd8094aull, {0xb176ull, 0x3d2eull, 0x2a17ull}, {0xa9b0ull, 0xbc2full}},
    {"StatelessRandomNormal", DF_HALF, DF_FLOAT, 1, {7, 0, 0}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xbb02full, 0xbb02full, {0xbecaull, 0xb7b4ull, 0xb94cull}, {0x3b8cull, 0x38efull}},
    {"StatelessRandomNormal", DF_HALF, DF_FLOAT, 3, {2, 3, 5}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xaed7f4ull, 0xaed7f4ull, {0xbecaull, 0xb7b4ull, 0xb94cull}, {0xc07eull, 0xbc23ull}},
    {"StatelessRandomNormal", DF_HALF, DF_FLOAT, 1, {100003, 0, 0}, 17ll, 3ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x8c34177a8f0full, 0x8c34177a8f0full, {0xbcdfull, 0xad67ull, 0x3e20ull}, {0xbcd9ull, 0x3514ull}},
    {"StatelessRandomNormal", DF_BFLOAT16, DF_FLOAT, 1, {7, 0, 0}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xc5fccull, 0xc5fccull, {0x3f0bull, 0x3e54ull, 0x3d97ull}, {0xbf74ull, 0x3f57ull}},
    {"StatelessRandomNormal", DF_BFLOAT16, DF_FLOAT, 3, {2, 3, 5}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xc72d97ull, 0xc72d97ull, {0x3f0bull, 0x3e54ull, 0x3d97ull}, {0x3f12ull, 0x3f61ull}},
    {"StatelessRandomNormal", DF_BFLOAT16, DF_FLOAT, 1, {7, 0, 0}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xf5e07ull, 0xf5e07ull, {0xbe2full, 0x3fa6ull, 0x3d43ull}, {0x3f3bull, 0xbec8ull}},
    {"StatelessRandomNormal", DF_BFLOAT16, DF_FLOAT, 3, {2, 3, 5}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xe55925ull, 0xe55925ull, {0xbe2full, 0x3fa6ull, 0x3d43ull}, {0xbd36ull, 0xbf86ull}},
    {"StatelessRandomNormal", DF_BFLOAT16, DF_FLOAT, 1, {7, 0, 0}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xc6609ull, 0xc6609ull, {0xbfd9ull, 0xbef6ull, 0xbf2aull}, {0x3f72ull, 0x3f1eull}},
    {"StatelessRandomNormal", DF_BFLOAT16, DF_FLOAT, 3, {2, 3, 5}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xb942d5ull, 0xb942d5ull, {0xbfd9ull, 0xbef6ull, 0xbf2aull}, {0xc010ull, 0xbf84ull}},
    {"StatelessRandomNormal", DF_BFLOAT16, DF_FLOAT, 1, {100003, 0, 0}, 17ll, 3ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x943c9607751cull, 0x943c9607751cull, {0xbf9cull, 0xbdadull, 0x3fc4ull}, {0xbf9bull, 0x3ea3ull}},
    {"StatelessTruncatedNormal", DF_FLOAT, DF_FLOAT, 1, {7, 0, 0}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x9d4a2f360ull, 0x9d4a2f360ull, {0x3f0b4acdull, 0x3e545b81ull, 0x3d96a8e4ull}, {0xbfd7af2cull, 0x3e77d657ull}},
    {"StatelessTruncatedNormal", DF_FLOAT, DF_FLOAT, 3, {2, 3, 5}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xfe18ea5aadull, 0xfe18ea5aadull, {0x3f0b4acdull, 0x3e545b81ull, 0x3d96a8e4ull}, {0xbfc8463bull, 0xbf208259ull}},
    {"StatelessTruncatedNormal", DF_FLOAT, DF_FLOAT, 1, {7, 0, 0}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x1268d1e9fbull, 0x1268d1e9fbull, {0xbe2ec31bull, 0x3fa5c454ull, 0x3d42dde9ull}, {0xbfc996d8ull, 0xbf25e868ull}},
    {"StatelessTruncatedNormal", DF_FLOAT, DF_FLOAT, 3, {2, 3, 5}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xf9438bc984ull, 0xf9438bc984ull, {0xbe2ec31bull, 0x3fa5c454ull, 0x3d42dde9ull}, {0xbfaac78aull, 0xbfb6558full}},
    {"StatelessTruncatedNormal", DF_FLOAT, DF_FLOAT, 1, {7, 0, 0}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xfd883d39bull, 0xfd883d39bull, {0xbfd93869ull, 0xbef67702ull, 0xbf29885cull}, {0x3db93d91ull, 0xbf5a57abull}},
    {"StatelessTruncatedNormal", DF_FLOAT, DF_FLOAT, 3, {2, 3, 5}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xc0724f4b37ull, 0xc0724f4b37ull, {0xbfd93869ull, 0xbef67702ull, 0xbf29885cull}, {0x3da0cc9full, 0x3f10561bull}},
    {"StatelessTruncatedNormal", DF_FLOAT, DF_FLOAT, 1, {100003, 0, 0}, 17ll, 3ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x93d40a0c70615176ull, 0x93d40a0c70615176ull, {0xbf9bd205ull, 0xbdacde9full, 0x3fc400b0ull}, {0x3ed8033dull, 0x3fcb52e6ull}},
    {"StatelessTruncatedNormal", DF_DOUBLE, DF_FLOAT, 1, {7, 0, 0}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xfc62179cf120968full, 0xfc62179cf120968full, {0xbfc23745fceed393ull, 0x3fe7b30df7adce2eull, 0xbfe1ad29167909a9ull}, {0x3fc850c94ed98bcbull, 0xbff1b8b647d0508dull}},
    {"StatelessTruncatedNormal", DF_DOUBLE, DF_FLOAT, 3, {2, 3, 5}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x7e22d1a6a0731e50ull, 0x7e22d1a6a0731e50ull, {0xbfc23745fceed393ull, 0x3fe7b30df7adce2eull, 0xbfe1ad29167909a9ull}, {0xbfd3bbbb274464e2ull, 0x3fcb0b1aeb648807ull}},
    {"StatelessTruncatedNormal", DF_DOUBLE, DF_FLOAT, 1, {7, 0, 0}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x7bfa460d1db048f3ull, 0x7bfa460d1db048f3ull, {0xbff48e2cab6fb536ull, 0x3fd7eab57ad20190ull, 0xbfd89ef00f71da27ull}, {0x3fe131d050ef3ddeull, 0x3fb900f53fa4a8ddull}},
    {"StatelessTruncatedNormal", DF_DOUBLE, DF_FLOAT, 3, {2, 3, 5}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xfdb2930374dad351ull, 0xfdb2930374dad351ull, {0xbff48e2cab6fb536ull, 0x3fd7eab57ad20190ull, 0xbfd89ef00f71da27ull}, {0x3ffd116f5b63e557ull, 0xbfb9fc3bee21f54aull}},
    {"StatelessTruncatedNormal", DF_DOUBLE, DF_FLOAT, 1, {7, 0, 0}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xfc4b7080a89020d4ull, 0xfc4b7080a89020d4ull, {0x3fe030fa118559cfull, 0xbfe66f81327f2828ull, 0x3ff675a59c09bd8eull}, {0xbff29dad1eb1342bull, 0xbfc97c2830739203ull}},
    {"StatelessTruncatedNormal", DF_DOUBLE, DF_FLOAT, 3, {2, 3, 5}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xfea5f997e93cc9cbull, 0xfea5f997e93cc9cbull, {0x3fe030fa118559cfull, 0xbfe66f81327f2828ull, 0x3ff675a59c09bd8eull}, {0xbfe461ecb25a629eull, 0x3fc6f80b319820e6ull}},
    {"StatelessTruncatedNormal", DF_DOUBLE, DF_FLOAT, 1, {100003, 0, 0}, 17ll, 3ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xb74a384390ef57fbull, 0xb74a384390ef57fbull, {0x3fe4f045229c9071ull, 0xbfc1a26b02152bd0ull, 0x3ff7a13e0109a5b4ull}, {0xbfe89f89ab4d269eull, 0x3ff22e25606f7917ull}},
    {"StatelessTruncatedNormal", DF_HALF, DF_FLOAT, 1, {7, 0, 0}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x8a518ull, 0x8a518ull, {0x385aull, 0x32a3ull, 0x2cb5ull}, {0xbebdull, 0x33bfull}},
    {"StatelessTruncatedNormal", DF_HALF, DF_FLOAT, 3, {2, 3, 5}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xef072aull, 0xef072aull, {0x385aull, 0x32a3ull, 0x2cb5ull}, {0xbe42ull, 0xb904ull}},
    {"StatelessTruncatedNormal", DF_HALF, DF_FLOAT, 1, {7, 0, 0}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x11c68dull, 0x11c68dull, {0xb176ull, 0x3d2eull, 0x2a17ull}, {0xbe4dull, 0xb92full}},
    {"StatelessTruncatedNormal", DF_HALF, DF_FLOAT, 3, {2, 3, 5}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xeedc58ull, 0xeedc58ull, {0xb176ull, 0x3d2eull, 0x2a17ull}, {0xbd56ull, 0xbdb3ull}},
    {"StatelessTruncatedNormal", DF_HALF, DF_FLOAT, 1, {7, 0, 0}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xec424ull, 0xec424ull, {0xbecaull, 0xb7b4ull, 0xb94cull}, {0x2dcaull, 0xbad3ull}},
    {"StatelessTruncatedNormal", DF_HALF, DF_FLOAT, 3, {2, 3, 5}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xb3d284ull, 0xb3d284ull, {0xbecaull, 0xb7b4ull, 0xb94cull}, {0x2d06ull, 0x3883ull}},
    {"StatelessTruncatedNormal", DF_HALF, DF_FLOAT, 1, {100003, 0, 0}, 17ll, 3ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x8b536451805full, 0x8b536451805full, {0xbcdfull, 0xad67ull, 0x3e20ull}, {0x36c0ull, 0x3e5bull}},
    {"StatelessTruncatedNormal", DF_BFLOAT16, DF_FLOAT, 1, {7, 0, 0}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x9d4a4ull, 0x9d4a4ull, {0x3f0bull, 0x3e54ull, 0x3d97ull}, {0xbfd8ull, 0x3e78ull}},
    {"StatelessTruncatedNormal", DF_BFLOAT16, DF_FLOAT, 3, {2, 3, 5}, 1ll, 2ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xfe18ebull, 0xfe18ebull, {0x3f0bull, 0x3e54ull, 0x3d97ull}, {0xbfc8ull, 0xbf21ull}},
    {"StatelessTruncatedNormal", DF_BFLOAT16, DF_FLOAT, 1, {7, 0, 0}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x1268d5ull, 0x1268d5ull, {0xbe2full, 0x3fa6ull, 0x3d43ull}, {0xbfcaull, 0xbf26ull}},
    {"StatelessTruncatedNormal", DF_BFLOAT16, DF_FLOAT, 3, {2, 3, 5}, -5ll, 9876543210ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xf94377ull, 0xf94377ull, {0xbe2full, 0x3fa6ull, 0x3d43ull}, {0xbfabull, 0xbfb6ull}},
    {"StatelessTruncatedNormal", DF_BFLOAT16, DF_FLOAT, 1, {7, 0, 0}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xfd87full, 0xfd87full, {0xbfd9ull, 0xbef6ull, 0xbf2aull}, {0x3db9ull, 0xbf5aull}},
    {"StatelessTruncatedNormal", DF_BFLOAT16, DF_FLOAT, 3, {2, 3, 5}, 0ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xc0724aull, 0xc0724aull, {0xbfd9ull, 0xbef6ull, 0xbf2aull}, {0x3da1ull, 0x3f10ull}},
    {"StatelessTruncatedNormal", DF_BFLOAT16, DF_FLOAT, 1, {100003, 0, 0}, 17ll, 3ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x93d409d85babull, 0x93d409d85babull, {0xbf9cull, 0xbdadull, 0x3fc4ull}, {0x3ed8ull, 0x3fcbull}},
    {"StatelessRandomUniform", DF_FLOAT, DF_FLOAT, 1, {9, 0, 0}, -3ll, 12ll, 1, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xb09b7def2ull, 0xb09b7def2ull, {0x3efcee14ull, 0x3e2e55b0ull, 0x3ef6344cull}, {0x3f784b38ull, 0x3ed46440ull}},
    {"StatelessRandomUniformInt", DF_INT32, DF_FLOAT, 1, {7, 0, 0}, 5ll, 6ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xfffffffffffffff6ull, 0x11ull, 0x60000004eull, 0x60000004eull, {0x4ull, 0x9ull, 0x3ull}, {0xfffffffbull, 0x3ull}},
    {"StatelessRandomUniformInt", DF_INT32, DF_FLOAT, 1, {100003, 0, 0}, 5ll, 6ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xfffffffffffffff6ull, 0x11ull, 0x6e96bec9814b04bcull, 0x6e96bec9814b04bcull, {0x4ull, 0x9ull, 0x3ull}, {0x8ull, 0xfffffffeull}},
    {"StatelessRandomUniformInt", DF_INT32, DF_FLOAT, 1, {7, 0, 0}, 5ll, 6ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xffffffff80000000ull, 0x7fffffffull, 0xb45526d4aull, 0xb45526d4aull, {0x7541896bull, 0xea9de0bull, 0xe1253ec0ull}, {0x70a26872ull, 0x85a68401ull}},
    {"StatelessRandomUniformInt", DF_INT32, DF_FLOAT, 1, {100003, 0, 0}, 5ll, 6ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xffffffff80000000ull, 0x7fffffffull, 0x94cbeec3d3de20e7ull, 0x94cbeec3d3de20e7ull, {0x7541896bull, 0xea9de0bull, 0xe1253ec0ull}, {0x98f8b9c8ull, 0x956e74f7ull}},
    {"StatelessRandomUniformInt", DF_INT64, DF_FLOAT, 1, {7, 0, 0}, 5ll, 6ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xfffffffffffffff6ull, 0x11ull, 0x47ull, 0x47ull, {0xfffffffffffffff6ull, 0x10ull, 0x6ull}, {0xfffffffffffffffcull, 0x9ull}},
    {"StatelessRandomUniformInt", DF_INT64, DF_FLOAT, 1, {100003, 0, 0}, 5ll, 6ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xfffffffffffffff6ull, 0x11ull, 0x382effd13ull, 0x382effd13ull, {0xfffffffffffffff6ull, 0x10ull, 0x6ull}, {0xfffffffffffffffbull, 0x9ull}},
    {"StatelessRandomUniformInt", DF_INT64, DF_FLOAT, 1, {7, 0, 0}, 5ll, 6ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xffffff0000000000ull, 0x4000000000000ull, 0x306ae33109646eull, 0x306ae33109646eull, {0x23c0bf541896bull, 0x1679161253ec0ull, 0x24e72ba53f6eaull}, {0x2e860bbb2a206ull, 0x1d7996000d1feull}},
    {"StatelessRandomUniformInt", DF_INT64, DF_FLOAT, 1, {100003, 0, 0}, 5ll, 6ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xffffff0000000000ull, 0x4000000000000ull, 0x135a161a9eece90full, 0x135a161a9eece90full, {0x23c0bf541896bull, 0x1679161253ec0ull, 0x24e72ba53f6eaull}, {0x3765189d9884ull, 0x239970fc593e4ull}},
    {"StatelessRandomUniformFullInt", DF_INT32, DF_FLOAT, 1, {11, 0, 0}, 8ll, 9ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x153c8f0875ull, 0x153c8f0875ull, {0xa1c1c52dull, 0xbf62b669ull, 0x714de12ull}, {0x2632221bull, 0xce736cd8ull}},
    {"StatelessRandomUniformFullInt", DF_INT64, DF_FLOAT, 1, {11, 0, 0}, 8ll, 9ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x54874abace99f3eull, 0x54874abace99f3eull, {0xbf62b669a1c1c52dull, 0xb31e20d20714de12ull, 0x7cf3e72ceff7a75ull}, {0xc7d40881b4070d99ull, 0xdc2b348a7b251687ull}},
    {"StatelessRandomUniformFullInt", DF_UINT32, DF_FLOAT, 1, {11, 0, 0}, 8ll, 9ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x153c8f0875ull, 0x153c8f0875ull, {0xa1c1c52dull, 0xbf62b669ull, 0x714de12ull}, {0x2632221bull, 0xce736cd8ull}},
    {"StatelessRandomUniformFullInt", DF_UINT64, DF_FLOAT, 1, {11, 0, 0}, 8ll, 9ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x54874abace99f3eull, 0x54874abace99f3eull, {0xbf62b669a1c1c52dull, 0xb31e20d20714de12ull, 0x7cf3e72ceff7a75ull}, {0xc7d40881b4070d99ull, 0xdc2b348a7b251687ull}},
    {"StatelessRandomUniformV2", DF_FLOAT, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0xd627132ceull, 0xd627132ceull, {0x3f4d999aull, 0x3c86e500ull, 0x3f4226baull}, {0x3f659d42ull, 0x3f7c95e8ull}},
    {"StatelessRandomUniformV2", DF_FLOAT, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0xd62667c30ull, 0xd62667c30ull, {0x3f581458ull, 0x3e44a788ull, 0x3f7f087cull}, {0x3ee0f2acull, 0x3dad9af0ull}},
    {"StatelessRandomUniformV2", DF_FLOAT, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x63ull, 0xfffffffffffffc18ull, 0xffffffffffffffffull, 1, 0x0ull, 0x0ull, 0x490ef99d8dfdcf6cull, 0x490ef99d8dfdcf6cull, {0x3f7bce6cull, 0x3f06a6d0ull, 0x3f5e64d4ull}, {0x3e778490ull, 0x3f0bc996ull}},
    {"StatelessRandomUniformV2", DF_DOUBLE, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0xb7cf11dded1fb056ull, 0xb7cf11dded1fb056ull, {0x3fdb33379e086e50ull, 0x3fb135da985a8360ull, 0x3fed260bc183414aull}, {0x3fe38bc62d848620ull, 0x3fe1d95e5e2333aeull}},
    {"StatelessRandomUniformV2", DF_DOUBLE, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0xb9ab2f8713ea135eull, 0xb9ab2f8713ea135eull, {0x3fe81458cf3129e2ull, 0x3fef087c2c290f26ull, 0x3fc6849f8a98ee28ull}, {0x3feadf3750539e86ull, 0x3fea46dcca5797e2ull}},
    {"StatelessRandomUniformV2", DF_DOUBLE, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x63ull, 0xfffffffffffffc18ull, 0xffffffffffffffffull, 1, 0x0ull, 0x0ull, 0x586b879a5b6a638cull, 0x586b879a5b6a638cull, {0x3febce6c1486a6d0ull, 0x3fee64d5c3c2b24eull, 0x3fddd224b2130ab0ull}, {0x3fe1702c0e11d37eull, 0x3feb999519cc7b5eull}},
    {"StatelessRandomUniformV2", DF_HALF, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0xbdfccull, 0xbdfccull, {0x3268ull, 0x3b28ull, 0x3abaull}, {0x3942ull, 0x39e8ull}},
    {"StatelessRandomUniformV2", DF_HALF, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0xb3fd0ull, 0xb3fd0ull, {0x3858ull, 0x3388ull, 0x2bc0ull}, {0x3158ull, 0x36bcull}},
    {"StatelessRandomUniformV2", DF_HALF, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x63ull, 0xfffffffffffffc18ull, 0xffffffffffffffffull, 1, 0x0ull, 0x0ull, 0x3ece781c3d16ull, 0x3ece781c3d16ull, {0x3a6cull, 0x3ad0ull, 0x38d4ull}, {0x3090ull, 0x3258ull}},
    {"StatelessRandomUniformV2", DF_BFLOAT16, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0xd7498ull, 0xd7498ull, {0x3f1aull, 0x3e20ull, 0x3f3aull}, {0x3e84ull, 0x3f68ull}},
    {"StatelessRandomUniformV2", DF_BFLOAT16, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0xd7d0eull, 0xd7d0eull, {0x3eb0ull, 0x3f62ull, 0x3ef8ull}, {0x3eacull, 0x3ebcull}},
    {"StatelessRandomUniformV2", DF_BFLOAT16, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x63ull, 0xfffffffffffffc18ull, 0xffffffffffffffffull, 1, 0x0ull, 0x0ull, 0x48837a7b5690ull, 0x48837a7b5690ull, {0x3ed8ull, 0x3f50ull, 0x3f54ull}, {0x3e10ull, 0x3f16ull}},
    {"StatelessRandomNormalV2", DF_FLOAT, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0x1779dbcb70ull, 0x1779dbcb70ull, {0x3d8c0fc0ull, 0x3f289ceeull, 0x3e50c413ull}, {0xbd1fea6eull, 0x3eedf8d3ull}},
    {"StatelessRandomNormalV2", DF_FLOAT, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0x13137447dcull, 0x13137447dcull, {0x3f0b4acdull, 0x3e545b81ull, 0x3d96a8e4ull}, {0x3f26b8d4ull, 0x3f8d6cedull}},
    {"StatelessRandomNormalV2", DF_FLOAT, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x63ull, 0xfffffffffffffc18ull, 0xffffffffffffffffull, 1, 0x0ull, 0x0ull, 0x93e435a70c98aadfull, 0x93e435a70c98aadfull, {0xbcf1ff03ull, 0xbe37a40full, 0xbf078442ull}, {0x3d650f77ull, 0xbee6a5d8ull}},
    {"StatelessRandomNormalV2", DF_DOUBLE, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0xba7a499a597de146ull, 0xba7a499a597de146ull, {0x3fe129548b0be8bcull, 0x3ff31753d3028388ull, 0x3fd4e060b0fd4b90ull}, {0xbfd6919eb4bd5889ull, 0xbfedb3e9e012425bull}},
    {"StatelessRandomNormalV2", DF_DOUBLE, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0xb8a2ef3af7cc36bbull, 0xb8a2ef3af7cc36bbull, {0xbfc23745fceed393ull, 0x3fe7b30df7adce2eull, 0xbff7813821086c87ull}, {0xbfe10dd80237903cull, 0x3fd05a2939ccb65full}},
    {"StatelessRandomNormalV2", DF_DOUBLE, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x63ull, 0xfffffffffffffc18ull, 0xffffffffffffffffull, 1, 0x0ull, 0x0ull, 0xbe5e44544d208fc6ull, 0xbe5e44544d208fc6ull, {0xbfc50af4286f2c55ull, 0x3fe01ff7f24e41c1ull, 0xbfded8f55a62f5deull}, {0xbfe51d2937066eb1ull, 0x3fe056c13eff81b8ull}},
    {"StatelessRandomNormalV2", DF_HALF, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0x158ed8ull, 0x158ed8ull, {0x2c60ull, 0x3945ull, 0x3286ull}, {0xa8ffull, 0x3770ull}},
    {"StatelessRandomNormalV2", DF_HALF, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0x11db9eull, 0x11db9eull, {0x385aull, 0x32a3ull, 0x2cb5ull}, {0x3936ull, 0x3c6bull}},
    {"StatelessRandomNormalV2", DF_HALF, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x63ull, 0xfffffffffffffc18ull, 0xffffffffffffffffull, 1, 0x0ull, 0x0ull, 0x8bdaa1ce93b5ull, 0x8bdaa1ce93b5ull, {0xa790ull, 0xb1bdull, 0xb83cull}, {0x2b28ull, 0xb735ull}},
    {"StatelessRandomNormalV2", DF_BFLOAT16, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0x1779deull, 0x1779deull, {0x3d8cull, 0x3f29ull, 0x3e51ull}, {0xbd20ull, 0x3eeeull}},
    {"StatelessRandomNormalV2", DF_BFLOAT16, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0x13136dull, 0x13136dull, {0x3f0bull, 0x3e54ull, 0x3d97ull}, {0x3f27ull, 0x3f8dull}},
    {"StatelessRandomNormalV2", DF_BFLOAT16, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x63ull, 0xfffffffffffffc18ull, 0xffffffffffffffffull, 1, 0x0ull, 0x0ull, 0x93e435a61161ull, 0x93e435a61161ull, {0xbcf2ull, 0xbe38ull, 0xbf08ull}, {0x3d65ull, 0xbee7ull}},
    {"StatelessTruncatedNormalV2", DF_FLOAT, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0x16844c5cd0ull, 0x16844c5cd0ull, {0x3d8c0fc0ull, 0x3f289ceeull, 0x3e50c413ull}, {0x3f5c5821ull, 0xbf6f35f6ull}},
    {"StatelessTruncatedNormalV2", DF_FLOAT, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0x158aca5b03ull, 0x158aca5b03ull, {0x3f0b4acdull, 0x3e545b81ull, 0x3d96a8e4ull}, {0x3f8d93a1ull, 0xbf8949c5ull}},
    {"StatelessTruncatedNormalV2", DF_FLOAT, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x63ull, 0xfffffffffffffc18ull, 0xffffffffffffffffull, 1, 0x0ull, 0x0ull, 0x93a6654ba1d1c3bcull, 0x93a6654ba1d1c3bcull, {0xbcf1ff03ull, 0xbe37a40full, 0xbf078442ull}, {0x3f85d2f1ull, 0xbf18f459ull}},
    {"StatelessTruncatedNormalV2", DF_DOUBLE, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0x37aeb94f03d776c2ull, 0x37aeb94f03d776c2ull, {0x3fe129548b0be8bcull, 0x3ff31753d3028388ull, 0x3fdfb5f097b0cb6cull}, {0xbfe28d58c16e1e3full, 0x3fec6ef373655497ull}},
    {"StatelessTruncatedNormalV2", DF_DOUBLE, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0x3a5285059c0fb475ull, 0x3a5285059c0fb475ull, {0xbfc23745fceed393ull, 0x3fe7b30df7adce2eull, 0xbfe1ad29167909a9ull}, {0xbfe931696fd06ee0ull, 0x3ff020a967415993ull}},
    {"StatelessTruncatedNormalV2", DF_DOUBLE, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x63ull, 0xfffffffffffffc18ull, 0xffffffffffffffffull, 1, 0x0ull, 0x0ull, 0x835eee1a7cb931dull, 0x835eee1a7cb931dull, {0xbfc50af4286f2c55ull, 0x3fe01ff7f24e41c1ull, 0x3fd5535c5dc5dedaull}, {0x3fe7afd70eb3cb2bull, 0xbfd7a934196466a4ull}},
    {"StatelessTruncatedNormalV2", DF_HALF, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0x14e26bull, 0x14e26bull, {0x2c60ull, 0x3945ull, 0x3286ull}, {0x3ae3ull, 0xbb7aull}},
    {"StatelessTruncatedNormalV2", DF_HALF, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0x141651ull, 0x141651ull, {0x385aull, 0x32a3ull, 0x2cb5ull}, {0x3c6dull, 0xbc4aull}},
    {"StatelessTruncatedNormalV2", DF_HALF, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x63ull, 0xfffffffffffffc18ull, 0xffffffffffffffffull, 1, 0x0ull, 0x0ull, 0x8b2ad463e703ull, 0x8b2ad463e703ull, {0xa790ull, 0xb1bdull, 0xb83cull}, {0x3c2full, 0xb8c8ull}},
    {"StatelessTruncatedNormalV2", DF_BFLOAT16, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0x168447ull, 0x168447ull, {0x3d8cull, 0x3f29ull, 0x3e51ull}, {0x3f5cull, 0xbf6full}},
    {"StatelessTruncatedNormalV2", DF_BFLOAT16, DF_FLOAT, 2, {2, 5, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0x158accull, 0x158accull, {0x3f0bull, 0x3e54ull, 0x3d97ull}, {0x3f8eull, 0xbf89ull}},
    {"StatelessTruncatedNormalV2", DF_BFLOAT16, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x63ull, 0xfffffffffffffc18ull, 0xffffffffffffffffull, 1, 0x0ull, 0x0ull, 0x93a665505453ull, 0x93a665505453ull, {0xbcf2ull, 0xbe38ull, 0xbf08ull}, {0x3f86ull, 0xbf19ull}},
    {"StatelessRandomUniformIntV2", DF_INT32, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0xfffffffffffffff6ull, 0x11ull, 0xd000000c8ull, 0xd000000c8ull, {0x8ull, 0xaull, 0x5ull}, {0x2ull, 0xeull}},
    {"StatelessRandomUniformIntV2", DF_INT32, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0xfffffffffffffff6ull, 0x11ull, 0x20ffffff9bull, 0x20ffffff9bull, {0x9ull, 0xaull, 0xfffffff6ull}, {0xfffffffcull, 0xfffffffeull}},
    {"StatelessRandomUniformIntV2", DF_INT32, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x5ull, 0x6ull, 0x7ull, 1, 0xfffffffffffffff6ull, 0x11ull, 0x6d8bc6988ca98e23ull, 0x6d8bc6988ca98e23ull, {0xfffffff9ull, 0xdull, 0xaull}, {0xeull, 0xeull}},
    {"StatelessRandomUniformIntV2", DF_INT64, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0xffffff0000000000ull, 0x4000000000000ull, 0x66debab5b86055ull, 0x66debab5b86055ull, {0x48949b66cccdull, 0x3513635e1135dull, 0x17da56c1e9305ull}, {0x393c25409f86cull, 0x93107d59c5e3ull}},
    {"StatelessRandomUniformIntV2", DF_INT64, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0xffffff0000000000ull, 0x4000000000000ull, 0x6badf59c3ebd54ull, 0x6badf59c3ebd54ull, {0x2b4f141ec0a2cull, 0x30393ebff843eull, 0x2d7c500a2d093ull}, {0x1441a1ae36c1eull, 0x3cf43234d6f9bull}},
    {"StatelessRandomUniformIntV2", DF_INT64, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x5ull, 0x6ull, 0x7ull, 1, 0xffffff0000000000ull, 0x4000000000000ull, 0xf2d7d53428d724a9ull, 0xf2d7d53428d724a9ull, {0x191363d9eb5e3ull, 0x12c017a2781abull, 0x1085d918a8cdeull}, {0x381d87a413730ull, 0xe91cf809f4ceull}},
    {"StatelessRandomUniformIntV2", DF_INT32, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0xffffffff80000000ull, 0x7fffffffull, 0xf6d07b5b5ull, 0xf6d07b5b5ull, {0x1b66cccdull, 0x67821b94ull, 0xb5e1135dull}, {0x1c01c61dull, 0x58f2cea1ull}},
    {"StatelessRandomUniformIntV2", DF_INT32, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0xffffffff80000000ull, 0x7fffffffull, 0x1d8fab5301ull, 0x1d8fab5301ull, {0xc1ec0a2cull, 0xe79894f1ull, 0x6bff843eull}, {0xa308573eull, 0xe0383cabull}},
    {"StatelessRandomUniformIntV2", DF_INT32, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x5ull, 0x6ull, 0x7ull, 1, 0xffffffff80000000ull, 0x7fffffffull, 0x94d9e1d6926d2cefull, 0x94d9e1d6926d2cefull, {0xbd9eb5e3ull, 0x1ba87236ull, 0xfa2781abull}, {0x84642a22ull, 0xffc482c9ull}},
    {"StatelessRandomUniformIntV2", DF_INT64, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x5ull, 0x400000000000000bull, 0x5c00d0bab5b86004ull, 0x5c00d0bab5b86004ull, {0x27821b949b66ccc0ull, 0x2985a83635e11356ull, 0x20c1a0a56c1e92f8ull}, {0x1f676bc25409f871ull, 0x16c243107d59c5e8ull}},
    {"StatelessRandomUniformIntV2", DF_INT64, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x5ull, 0x400000000000000bull, 0xd222bbf59c3ebc85ull, 0xd222bbf59c3ebc85ull, {0x279894f141ec0a2bull, 0x16148793ebff8443ull, 0x31531dc500a2d086ull}, {0x2302031a1ae36c23ull, 0x2829cf43234d6f94ull}},
    {"StatelessRandomUniformIntV2", DF_INT64, DF_FLOAT, 1, {100003, 0, 0}, 0ll, 0ll, 0, 0x5ull, 0x6ull, 0x7ull, 1, 0x5ull, 0x400000000000000bull, 0x8a88a92f7e24cc77ull, 0x8a88a92f7e24cc77ull, {0x1ba872363d9eb5dcull, 0x3b840a017a2781b0ull, 0x144a0e5d918a8cd1ull}, {0x32c44d87a413729ull, 0x2dc44c1cf809f4c1ull}},
    {"StatelessRandomUniformFullIntV2", DF_INT32, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0x1ded07b5b5ull, 0x1ded07b5b5ull, {0x9b66cccdull, 0xe7821b94ull, 0x35e1135dull}, {0x9c01c61dull, 0xd8f2cea1ull}},
    {"StatelessRandomUniformFullIntV2", DF_INT32, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0x100fab5301ull, 0x100fab5301ull, {0x41ec0a2cull, 0x679894f1ull, 0xebff843eull}, {0x2308573eull, 0x60383cabull}},
    {"StatelessRandomUniformFullIntV2", DF_INT64, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0x1c00d0bab5b86055ull, 0x1c00d0bab5b86055ull, {0xe7821b949b66cccdull, 0xa985a83635e1135dull, 0xe0c1a0a56c1e9305ull}, {0x1f676bc25409f86cull, 0x16c243107d59c5e3ull}},
    {"StatelessRandomUniformFullIntV2", DF_INT64, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0xd222bbf59c3ebd54ull, 0xd222bbf59c3ebd54ull, {0x679894f141ec0a2cull, 0x16148793ebff843eull, 0xf1531dc500a2d093ull}, {0x2302031a1ae36c1eull, 0xa829cf43234d6f9bull}},
    {"StatelessRandomUniformFullIntV2", DF_UINT32, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0x1ded07b5b5ull, 0x1ded07b5b5ull, {0x9b66cccdull, 0xe7821b94ull, 0x35e1135dull}, {0x9c01c61dull, 0xd8f2cea1ull}},
    {"StatelessRandomUniformFullIntV2", DF_UINT32, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0x100fab5301ull, 0x100fab5301ull, {0x41ec0a2cull, 0x679894f1ull, 0xebff843eull}, {0x2308573eull, 0x60383cabull}},
    {"StatelessRandomUniformFullIntV2", DF_UINT64, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x123456789abcdefull, 0xfffffffffffffffdull, 0x7ull, 1, 0x0ull, 0x0ull, 0x1c00d0bab5b86055ull, 0x1c00d0bab5b86055ull, {0xe7821b949b66cccdull, 0xa985a83635e1135dull, 0xe0c1a0a56c1e9305ull}, {0x1f676bc25409f86cull, 0x16c243107d59c5e3ull}},
    {"StatelessRandomUniformFullIntV2", DF_UINT64, DF_FLOAT, 1, {9, 0, 0}, 0ll, 0ll, 0, 0x908502c96d2f7fbaull, 0x0ull, 0xf7734320619cb60bull, 3, 0x0ull, 0x0ull, 0xd222bbf59c3ebd54ull, 0xd222bbf59c3ebd54ull, {0x679894f141ec0a2cull, 0x16148793ebff843eull, 0xf1531dc500a2d093ull}, {0x2302031a1ae36c1eull, 0xa829cf43234d6f9bull}},
    {"RandomUniformInt", DF_INT32, DF_FLOAT, 1, {7, 0, 0}, 1ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xfffffffffffffff6ull, 0x11ull, 0x7000000a9ull, 0xf00000042ull, {0xfffffffdull, 0xfffffff9ull, 0x1ull}, {0xfull, 0x10ull}},
    {"RandomUniformInt", DF_INT32, DF_FLOAT, 2, {2, 500, 0}, 1ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xfffffffffffffff6ull, 0x11ull, 0x2c73700174c7bull, 0x3143f0012225full, {0xfffffffdull, 0xfffffff9ull, 0x1ull}, {0xcull, 0xfffffffbull}},
    {"RandomUniformInt", DF_INT32, DF_FLOAT, 1, {7, 0, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xfffffffffffffff6ull, 0x11ull, 0xa00000008ull, 0xe00000054ull, {0xfffffff6ull, 0xfffffff8ull, 0xfffffff8ull}, {0xaull, 0x2ull}},
    {"RandomUniformInt", DF_INT32, DF_FLOAT, 2, {2, 500, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xfffffffffffffff6ull, 0x11ull, 0x2ef8000181287ull, 0x2e4a60014d28bull, {0xfffffff6ull, 0xfffffff8ull, 0xfffffff8ull}, {0xfull, 0xfffffffaull}},
    {"RandomUniformInt", DF_INT64, DF_FLOAT, 1, {7, 0, 0}, 1ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xffffff0000000000ull, 0x4000000000000ull, 0x2a9e31cc9ba1c8ull, 0x2dd78512bb51fdull, {0xd9bce3e80670ull, 0x2f2795f222c0ull, 0x1e8beac08141bull}, {0x24976b68faa8eull, 0x9864c1f3cfa1ull}},
    {"RandomUniformInt", DF_INT64, DF_FLOAT, 2, {2, 500, 0}, 1ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xffffff0000000000ull, 0x4000000000000ull, 0xd4fc8ed745a1549ull, 0x1b89f65f17a02b1bull, {0xd9bce3e80670ull, 0x2f2795f222c0ull, 0x1e8beac08141bull}, {0x18f3d72618e24ull, 0x3ee89a9c0fed0ull}},
    {"RandomUniformInt", DF_INT64, DF_FLOAT, 1, {7, 0, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xffffff0000000000ull, 0x4000000000000ull, 0x4b598c4ab02cc6ull, 0x4bfa485ea890d7ull, {0x29912d9a7822full, 0x1934efb8896b3ull, 0x370442be0c99bull}, {0x3472dc5d2e46eull, 0x35b944a1710f4ull}},
    {"RandomUniformInt", DF_INT64, DF_FLOAT, 2, {2, 500, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0xffffff0000000000ull, 0x4000000000000ull, 0x67052bae275c641dull, 0x62ab6b16ebc2820bull, {0x29912d9a7822full, 0x1934efb8896b3ull, 0x370442be0c99bull}, {0x2dc97eda0b047ull, 0x1bcbe9e49550dull}},
    {"RandomUniformInt", DF_INT32, DF_FLOAT, 1, {7, 0, 0}, 1ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x1ull, 0x0ull, 0x0ull, {0x0ull, 0x0ull, 0x0ull}, {0x0ull, 0x0ull}},
    {"RandomUniformInt", DF_INT32, DF_FLOAT, 2, {2, 500, 0}, 1ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x1ull, 0x0ull, 0x0ull, {0x0ull, 0x0ull, 0x0ull}, {0x0ull, 0x0ull}},
    {"RandomUniformInt", DF_INT32, DF_FLOAT, 1, {7, 0, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x1ull, 0x0ull, 0x0ull, {0x0ull, 0x0ull, 0x0ull}, {0x0ull, 0x0ull}},
    {"RandomUniformInt", DF_INT32, DF_FLOAT, 2, {2, 500, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x1ull, 0x0ull, 0x0ull, {0x0ull, 0x0ull, 0x0ull}, {0x0ull, 0x0ull}},
    {"RandomShuffle", DF_INT32, DF_FLOAT, 1, {10, 0, 0}, 1ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x111ull, 0xf8ull, {0x2ull, 0x4ull, 0x0ull}, {0x3ull, 0x7ull}},
    {"RandomShuffle", DF_INT32, DF_FLOAT, 1, {10, 0, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x11eull, 0xffull, {0x1ull, 0x3ull, 0x5ull}, {0x7ull, 0x6ull}},
    {"RandomShuffle", DF_FLOAT, DF_FLOAT, 2, {6, 3, 0}, 1ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x28d3680000ull, 0x2b24600000ull, {0x41400000ull, 0x41500000ull, 0x41600000ull}, {0x41200000ull, 0x41300000ull}},
    {"RandomShuffle", DF_FLOAT, DF_FLOAT, 2, {6, 3, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x2730a00000ull, 0x27f8200000ull, {0x41100000ull, 0x41200000ull, 0x41300000ull}, {0x3f800000ull, 0x40000000ull}},
    {"RandomShuffle", DF_INT64, DF_FLOAT, 1, {1000, 0, 0}, 1ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xef97faeull, 0xec4c258ull, {0x20ull, 0x55ull, 0xe0ull}, {0xb6ull, 0x2d5ull}},
    {"RandomShuffle", DF_INT64, DF_FLOAT, 1, {1000, 0, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xece683aull, 0xed4f64aull, {0x2c7ull, 0x1eull, 0x29full}, {0x125ull, 0x26dull}},
    {"RandomShuffle", DF_DOUBLE, DF_FLOAT, 3, {5, 2, 2}, 1ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x57f4000000000000ull, 0x5404000000000000ull, {0x4020000000000000ull, 0x4022000000000000ull, 0x4024000000000000ull}, {0x402c000000000000ull, 0x402e000000000000ull}},
    {"RandomShuffle", DF_DOUBLE, DF_FLOAT, 3, {5, 2, 2}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0x5744000000000000ull, 0x57c4000000000000ull, {0x4010000000000000ull, 0x4014000000000000ull, 0x4018000000000000ull}, {0x4024000000000000ull, 0x4026000000000000ull}},
    {"RandomShuffle", DF_INT32, DF_FLOAT, 1, {100003, 0, 0}, 1ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xe357b830b3daull, 0xe35212a1c034ull, {0x4b7full, 0xfcebull, 0xbdfeull}, {0x13d57ull, 0x8cb2ull}},
    {"RandomShuffle", DF_INT32, DF_FLOAT, 1, {100003, 0, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x0ull, 0x0ull, 0xe37fa71e6852ull, 0xe3a112ef7d58ull, {0x5e66ull, 0x138f3ull, 0x1617eull}, {0x38edull, 0x34dfull}},
    {"Multinomial", DF_INT64, DF_FLOAT, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x174ull, 0x206ull, {0x3ull, 0x3ull, 0x0ull}, {0x2ull, 0x1ull}},
    {"Multinomial", DF_INT64, DF_DOUBLE, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x174ull, 0x206ull, {0x3ull, 0x3ull, 0x0ull}, {0x2ull, 0x1ull}},
    {"Multinomial", DF_INT64, DF_HALF, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x174ull, 0x206ull, {0x3ull, 0x3ull, 0x0ull}, {0x2ull, 0x1ull}},
    {"Multinomial", DF_INT64, DF_BFLOAT16, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x174ull, 0x206ull, {0x3ull, 0x3ull, 0x0ull}, {0x2ull, 0x1ull}},
    {"Multinomial", DF_INT32, DF_FLOAT, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x174ull, 0x206ull, {0x3ull, 0x3ull, 0x0ull}, {0x2ull, 0x1ull}},
    {"Multinomial", DF_INT32, DF_DOUBLE, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x174ull, 0x206ull, {0x3ull, 0x3ull, 0x0ull}, {0x2ull, 0x1ull}},
    {"Multinomial", DF_INT32, DF_HALF, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x174ull, 0x206ull, {0x3ull, 0x3ull, 0x0ull}, {0x2ull, 0x1ull}},
    {"Multinomial", DF_INT32, DF_BFLOAT16, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x174ull, 0x206ull, {0x3ull, 0x3ull, 0x0ull}, {0x2ull, 0x1ull}},
    {"Multinomial", DF_INT64, DF_FLOAT, 2, {4, 1000, 0}, 3ll, 4ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x61a9ull, 0x0ull, 0x244bbe31aaaull, 0x247d0f4f283ull, {0x187ull, 0x24aull, 0x13cull}, {0x13eull, 0x1dcull}},
    {"Multinomial", DF_INT64, DF_DOUBLE, 2, {1, 4, 0}, 1ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x6ull, 0x0ull, 0x2aull, 0x30ull, {0x3ull, 0x1ull, 0x3ull}, {0x2ull, 0x3ull}},
    {"StatelessMultinomial", DF_INT64, DF_FLOAT, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x17dull, 0x17dull, {0x3ull, 0x1ull, 0x3ull}, {0x2ull, 0x2ull}},
    {"StatelessMultinomial", DF_INT64, DF_DOUBLE, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x17dull, 0x17dull, {0x3ull, 0x1ull, 0x3ull}, {0x2ull, 0x2ull}},
    {"StatelessMultinomial", DF_INT64, DF_HALF, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x17dull, 0x17dull, {0x3ull, 0x1ull, 0x3ull}, {0x2ull, 0x2ull}},
    {"StatelessMultinomial", DF_INT64, DF_BFLOAT16, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x17dull, 0x17dull, {0x3ull, 0x1ull, 0x3ull}, {0x2ull, 0x2ull}},
    {"StatelessMultinomial", DF_INT32, DF_FLOAT, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x17dull, 0x17dull, {0x3ull, 0x1ull, 0x3ull}, {0x2ull, 0x2ull}},
    {"StatelessMultinomial", DF_INT32, DF_DOUBLE, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x17dull, 0x17dull, {0x3ull, 0x1ull, 0x3ull}, {0x2ull, 0x2ull}},
    {"StatelessMultinomial", DF_INT32, DF_HALF, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x17dull, 0x17dull, {0x3ull, 0x1ull, 0x3ull}, {0x2ull, 0x2ull}},
    {"StatelessMultinomial", DF_INT32, DF_BFLOAT16, 2, {3, 5, 0}, 42ll, 123ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x7ull, 0x0ull, 0x17dull, 0x17dull, {0x3ull, 0x1ull, 0x3ull}, {0x2ull, 0x2ull}},
    {"StatelessMultinomial", DF_INT64, DF_FLOAT, 2, {4, 1000, 0}, 3ll, 4ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x61a9ull, 0x0ull, 0x241bcaed646ull, 0x241bcaed646ull, {0x3b1ull, 0x2fbull, 0xbfull}, {0x1d9ull, 0x35aull}},
    {"StatelessMultinomial", DF_INT64, DF_DOUBLE, 2, {1, 4, 0}, 1ll, 0ll, 0, 0x0ull, 0x0ull, 0x0ull, 0, 0x6ull, 0x0ull, 0x1cull, 0x1cull, {0x0ull, 0x3ull, 0x0ull}, {0x2ull, 0x0ull}},
    /* ---- generated: end ---- */
};

static int is_stateful(const char *op) {
    return !strcmp(op, "RandomUniformInt") || !strcmp(op, "RandomShuffle") || !strcmp(op, "Multinomial");
}

static uint64_t bits_at(const df_tensor *t, int64_t i) {
    size_t es = df_dtype_size(df_tensor_dtype(t));
    const char *p = (const char *)df_tensor_data(t) + es * (size_t)i;
    if (es == 2) { uint16_t u; memcpy(&u, p, 2); return u; }
    if (es == 4) { uint32_t u; memcpy(&u, p, 4); return u; }
    uint64_t u; memcpy(&u, p, 8); return u;
}
static uint64_t checksum(const df_tensor *t) {
    uint64_t s = 0;
    int64_t n = df_tensor_num_elements(t);
    for (int64_t i = 0; i < n; i++) s += bits_at(t, i) * (uint64_t)(i + 1);
    return s;
}

/* A constant of dtype t and the given shape; v[i] (as bits of an integer, or a double for float types). */
static df_output constant(df_graph *g, df_dtype t, int rank, const int64_t *dims, const double *fv,
                          const unsigned long long *iv) {
    df_status st;
    df_status_clear(&st);
    df_tensor *x = df_tensor_new(t, rank, dims, &st);
    df_output o = {NULL, 0};
    if (!x) return o;
    int64_t n = df_tensor_num_elements(x);
    char *p = (char *)df_tensor_data(x);
    for (int64_t i = 0; i < n; i++) {
        switch (t) {
        case DF_FLOAT: ((float *)p)[i] = (float)fv[i]; break;
        case DF_DOUBLE: ((double *)p)[i] = fv[i]; break;
        case DF_HALF: ((uint16_t *)p)[i] = df_float_to_half((float)fv[i]); break;
        case DF_BFLOAT16: ((uint16_t *)p)[i] = df_float_to_bfloat16((float)fv[i]); break;
        case DF_INT32: case DF_UINT32: ((uint32_t *)p)[i] = (uint32_t)iv[i]; break;
        default: ((uint64_t *)p)[i] = (uint64_t)iv[i]; break;
        }
    }
    o = df_const(g, x);
    df_tensor_release(x);
    return o;
}
static df_output iconst(df_graph *g, df_dtype t, int rank, int64_t n0, const unsigned long long *v) {
    return constant(g, t, rank, &n0, NULL, v);
}

/* Builds case c's op in g. */
static df_output build(df_graph *g, const rcase *c) {
    unsigned long long shape[3];
    for (int d = 0; d < c->rank; d++) shape[d] = (unsigned long long)c->dims[d];
    int64_t n = 1;
    for (int d = 0; d < c->rank; d++) n *= c->dims[d];
    df_op_builder *b = df_op_new(g, c->op, "r");
    const char *op = c->op;
    df_dtype t = (df_dtype)c->dtype;
    unsigned long long seed[2] = {(unsigned long long)c->s0, (unsigned long long)c->s1};
    if (!strcmp(op, "RandomShuffle")) {
        int64_t dims[3] = {c->dims[0], c->dims[1], c->dims[2]};
        double *fv = (double *)malloc(sizeof(double) * (size_t)n);
        unsigned long long *iv = (unsigned long long *)malloc(sizeof(unsigned long long) * (size_t)n);
        for (int64_t i = 0; i < n; i++) { fv[i] = (double)i; iv[i] = (unsigned long long)i; }
        df_op_add_input(b, constant(g, t, c->rank, dims, fv, iv));
        free(fv); free(iv);
    } else if (strstr(op, "Multinomial")) {
        int64_t dims[2] = {c->dims[0], c->dims[1]};
        double *fv = (double *)malloc(sizeof(double) * (size_t)n);
        for (int64_t i = 0; i < c->dims[0]; i++)
            for (int64_t k = 0; k < c->dims[1]; k++) fv[i * c->dims[1] + k] = (double)((7 * i + 3 * k) % 11) * 0.25 - 1.0;
        df_op_add_input(b, constant(g, (df_dtype)c->ltype, 2, dims, fv, NULL));
        free(fv);
        unsigned long long ns = c->lo;
        df_op_add_input(b, iconst(g, DF_INT32, 0, 0, &ns));
        if (!strcmp(op, "StatelessMultinomial")) df_op_add_input(b, iconst(g, DF_INT64, 1, 2, seed));
        df_op_set_attr_type(b, "output_dtype", t);
    } else {
        df_op_add_input(b, iconst(g, DF_INT32, 1, c->rank, shape));
        if (strstr(op, "V2")) {
            unsigned long long ctr[2] = {c->c0, c->c1}, alg = (unsigned long long)c->alg;
            df_op_add_input(b, iconst(g, DF_UINT64, 1, 1, &c->key));
            df_op_add_input(b, iconst(g, DF_UINT64, 1, 2, ctr));
            df_op_add_input(b, iconst(g, DF_INT32, 0, 0, &alg));
        } else if (!is_stateful(op)) df_op_add_input(b, iconst(g, c->seed32 ? DF_INT32 : DF_INT64, 1, 2, seed));
        if (strstr(op, "Int") && !strstr(op, "FullInt")) {
            df_op_add_input(b, iconst(g, t, 0, 0, &c->lo));
            df_op_add_input(b, iconst(g, t, 0, 0, &c->hi));
        } else if (!is_stateful(op)) df_op_set_attr_type(b, "dtype", t);
    }
    if (is_stateful(op)) {
        df_op_set_attr_int(b, "seed", c->s0);
        df_op_set_attr_int(b, "seed2", c->s1);
    }
    df_output y = {df_op_finish(b), 0};
    return y;
}

static int check_case(const rcase *c, int threads) {
    df_status st;
    df_status_clear(&st);
    df_graph *g = df_graph_new();
    df_output y = build(g, c);
    CHECK(y.node != NULL);
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.intra_op_threads = threads;
    df_session *s = df_session_new(g, &o, &st);
    CHECK_OK(&st);
    df_tensor *r1 = NULL, *r2 = NULL;
    int ok = 0;
    if (s && y.node) {
        df_session_run(s, NULL, NULL, 0, &y, &r1, 1, NULL, 0, &st); CHECK_OK(&st);
        df_session_run(s, NULL, NULL, 0, &y, &r2, 1, NULL, 0, &st); CHECK_OK(&st);
    }
    if (r1 && r2) {
        int64_t n = 1;
        for (int d = 0; d < c->rank; d++) n *= c->dims[d];
        if (strstr(c->op, "Multinomial")) n = c->dims[0] * (int64_t)c->lo;
        CHECK_EQ_INT(df_tensor_num_elements(r1), n);
        CHECK_EQ_INT(df_tensor_dtype(r1), c->dtype);
        ok = df_tensor_num_elements(r1) == n;
        for (int i = 0; ok && i < 3 && i < n; i++) {
            CHECK_MSG(bits_at(r1, i) == c->first[i], "%s %s n=%lld: element %d bits 0x%llx, TF 0x%llx", c->op,
                      df_dtype_name((df_dtype)c->dtype), (long long)n, i, (unsigned long long)bits_at(r1, i),
                      (unsigned long long)c->first[i]);
            ok &= bits_at(r1, i) == c->first[i];
        }
        for (int i = 0; ok && i < 2 && n >= 2; i++) {
            CHECK_MSG(bits_at(r1, n - 2 + i) == c->last[i], "%s %s n=%lld: element %lld bits 0x%llx, TF 0x%llx", c->op,
                      df_dtype_name((df_dtype)c->dtype), (long long)n, (long long)(n - 2 + i),
                      (unsigned long long)bits_at(r1, n - 2 + i), (unsigned long long)c->last[i]);
            ok &= bits_at(r1, n - 2 + i) == c->last[i];
        }
        if (ok) {
            CHECK_MSG(checksum(r1) == c->sum1, "%s %s n=%lld (threads %d): run 1 differs from TF", c->op,
                      df_dtype_name((df_dtype)c->dtype), (long long)n, threads);
            CHECK_MSG(checksum(r2) == c->sum2, "%s %s n=%lld (threads %d): run 2 differs from TF", c->op,
                      df_dtype_name((df_dtype)c->dtype), (long long)n, threads);
            ok = checksum(r1) == c->sum1 && checksum(r2) == c->sum2;
        }
    } else CHECK(r1 && r2);
    df_tensor_release(r1); df_tensor_release(r2);
    df_session_free(s);
    df_graph_free(g);
    return ok;
}

/* Every case of the ops whose name starts with prefix (and, for exact, equals it); returns how many. */
static int check_ops(const char *name, int exact) {
    int seen = 0, ncases = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < ncases; i++) {
        const char *op = cases[i].op;
        if (exact ? strcmp(op, name) : strncmp(op, name, strlen(name))) continue;
        int64_t n = 1;
        for (int d = 0; d < cases[i].rank; d++) n *= cases[i].dims[d];
        check_case(&cases[i], 1);
        if (n > 50000) check_case(&cases[i], 2);   /* the big ones also split between two threads */
        seen++;
    }
    return seen;
}

DF_TEST(random2_stateless_uniform_normal_truncated_v1_match_tf) {
    CHECK(check_ops("StatelessRandomUniform", 1) == 4 * 7 + 1);
    CHECK(check_ops("StatelessRandomNormal", 1) == 4 * 7);
    CHECK(check_ops("StatelessTruncatedNormal", 1) == 4 * 7);
}
DF_TEST(random2_stateless_uniform_int_v1_match_tf) {
    CHECK(check_ops("StatelessRandomUniformInt", 1) == 8);
    CHECK(check_ops("StatelessRandomUniformFullInt", 1) == 4);
}
DF_TEST(random2_stateless_v2_match_tf) {
    CHECK(check_ops("StatelessRandomUniformV2", 1) == 12);
    CHECK(check_ops("StatelessRandomNormalV2", 1) == 12);
    CHECK(check_ops("StatelessTruncatedNormalV2", 1) == 12);
    CHECK(check_ops("StatelessRandomUniformIntV2", 1) == 12);
    CHECK(check_ops("StatelessRandomUniformFullIntV2", 1) == 8);
}
DF_TEST(random2_random_uniform_int_matches_tf) { CHECK(check_ops("RandomUniformInt", 1) == 12); }
DF_TEST(random2_random_shuffle_matches_tf) { CHECK(check_ops("RandomShuffle", 1) == 10); }
DF_TEST(random2_multinomial_matches_tf) {
    CHECK(check_ops("Multinomial", 1) == 10);
    CHECK(check_ops("StatelessMultinomial", 1) == 10);
}

/* ---- StatelessRandomGetKeyCounter / GetAlg / GetKeyCounterAlg (values from TensorFlow 2.21) ---- */
DF_TEST(random2_get_key_counter_alg_match_tf) {
    for (int k = 0; k < 2; k++) {
        df_status st;
        df_status_clear(&st);
        df_graph *g = df_graph_new();
        unsigned long long seed[2] = {1, 2};
        df_op_builder *b = df_op_new(g, k ? "StatelessRandomGetKeyCounterAlg" : "StatelessRandomGetKeyCounter", "kc");
        df_op_add_input(b, iconst(g, k ? DF_INT32 : DF_INT64, 1, 2, seed));
        df_node *n = df_op_finish(b);
        df_op_builder *ba = df_op_new(g, "StatelessRandomGetAlg", "alg");
        df_node *na = df_op_finish(ba);
        CHECK(n != NULL && na != NULL);
        df_output outs[4] = {{n, 0}, {n, 1}, {na, 0}, {n, 2}};
        df_tensor *r[4] = {NULL, NULL, NULL, NULL};
        df_session *s = df_session_new(g, NULL, &st);
        CHECK_OK(&st);
        if (s) df_session_run(s, NULL, NULL, 0, outs, r, k ? 4 : 3, NULL, 0, &st);
        CHECK_OK(&st);
        if (r[0] && r[1] && r[2]) {
            CHECK_EQ_INT(df_tensor_dtype(r[0]), DF_UINT64);
            CHECK_EQ_INT(df_tensor_num_elements(r[0]), 1);
            CHECK_EQ_INT(df_tensor_num_elements(r[1]), 2);
            const uint64_t *kk = (const uint64_t *)df_tensor_data(r[0]), *cc = (const uint64_t *)df_tensor_data(r[1]);
            CHECK(kk[0] == 10413732777507651514ull);
            CHECK(cc[0] == 0 && cc[1] == 17830669156045600267ull);
            CHECK_EQ_INT(*(const int32_t *)df_tensor_data(r[2]), 1);
            if (k) CHECK(r[3] && *(const int32_t *)df_tensor_data(r[3]) == 1);
        } else CHECK(0);
        for (int i = 0; i < 4; i++) df_tensor_release(r[i]);
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- bad inputs: InvalidArgument with TensorFlow's wording, naming the node ---- */
typedef struct { const char *op; int variant; const char *want; } bad_case;

static df_node *bad_graph(df_graph *g, const bad_case *bc) {
    unsigned long long shape[1] = {4}, seed2[2] = {1, 2}, seed3[3] = {1, 2, 3}, five = 5, six = 6, m1 = (unsigned long long)-1;
    unsigned long long key[2] = {1, 2}, ctr[2] = {3, 4}, alg1 = 1, alg2 = 2, alg7 = 7;
    df_op_builder *b = df_op_new(g, bc->op, "bad_node");
    const char *op = bc->op;
    int v = bc->variant;
    if (!strcmp(op, "RandomUniformInt")) {
        df_op_add_input(b, iconst(g, DF_INT32, 1, 1, shape));
        df_op_add_input(b, v == 1 ? iconst(g, DF_INT32, 1, 1, &five) : iconst(g, DF_INT32, 0, 0, &five));
        df_op_add_input(b, iconst(g, DF_INT32, 0, 0, v == 0 ? &five : &six));
        df_op_set_attr_int(b, "seed", 1);
    } else if (strstr(op, "Multinomial")) {
        double lg[4] = {0, 1, 2, 3};
        int64_t d2[2] = {2, 2}, d1[1] = {4}, d0[2] = {2, 0};
        df_op_add_input(b, constant(g, DF_FLOAT, v == 1 ? 1 : 2, v == 1 ? d1 : v == 2 ? d0 : d2, lg, NULL));
        df_op_add_input(b, iconst(g, DF_INT32, 0, 0, v == 0 ? &m1 : &five));
        if (strstr(op, "Stateless")) df_op_add_input(b, v == 3 ? iconst(g, DF_INT64, 1, 3, seed3) : iconst(g, DF_INT64, 1, 2, seed2));
    } else if (strstr(op, "GetKeyCounter")) {
        df_op_add_input(b, iconst(g, DF_INT64, 1, 3, seed3));
    } else if (strstr(op, "V2")) {
        df_op_add_input(b, iconst(g, DF_INT32, 1, 1, shape));
        df_op_add_input(b, iconst(g, DF_UINT64, 1, v == 0 ? 2 : 1, key));
        df_op_add_input(b, iconst(g, DF_UINT64, 1, v == 1 ? 1 : 2, ctr));
        df_op_add_input(b, v == 2 ? iconst(g, DF_INT32, 0, 0, &alg2) : v == 3 ? iconst(g, DF_INT32, 0, 0, &alg7) :
                           v == 4 ? iconst(g, DF_INT32, 1, 1, &alg1) : iconst(g, DF_INT32, 0, 0, &alg1));
        if (strstr(op, "Int")) {
            df_op_add_input(b, iconst(g, DF_INT64, 0, 0, &six));
            df_op_add_input(b, iconst(g, DF_INT64, 0, 0, &five));
        }
    } else {                     /* V1 stateless */
        df_op_add_input(b, iconst(g, DF_INT32, 1, 1, shape));
        df_op_add_input(b, v == 0 ? iconst(g, DF_INT64, 1, 3, seed3) : iconst(g, v == 3 ? DF_UINT64 : DF_INT64, 1, 2, seed2));
        if (strstr(op, "Int") && !strstr(op, "FullInt")) {
            df_op_add_input(b, v == 2 ? iconst(g, DF_INT64, 1, 1, &five) : iconst(g, DF_INT64, 0, 0, &five));
            df_op_add_input(b, iconst(g, DF_INT64, 0, 0, v == 1 ? &five : &six));
        }
    }
    return df_op_finish(b);
}

DF_TEST(random2_bad_inputs_name_the_node) {
    static const bad_case bad[] = {
        {"RandomUniformInt", 0, "Need minval < maxval, got 5 >= 5"},
        {"RandomUniformInt", 1, "minval must be 0-D, got shape [1]"},
        {"Multinomial", 0, "num_samples should be non-negative, got -1"},
        {"Multinomial", 1, "logits should be a matrix"},
        {"StatelessMultinomial", 2, "num_classes should be positive, got 0"},
        {"StatelessMultinomial", 3, "seed must have shape [2], not [3]"},
        {"StatelessRandomGetKeyCounter", 0, "seed must have shape [2], not [3]"},
        {"StatelessRandomGetKeyCounterAlg", 0, "seed must have shape [2], not [3]"},
        {"StatelessRandomUniformV2", 0, "key must have shape [1], not [2]"},
        {"StatelessRandomNormalV2", 1, "counter must be a vector with length at least 2; got shape: [1]"},
        {"StatelessRandomUniformV2", 2, "Unsupported algorithm id: 2"},
        {"StatelessTruncatedNormalV2", 3, "Unsupported algorithm id: 7"},
        {"StatelessRandomUniformV2", 4, "input 3 (0-based) must have shape [], not [1]"},
        {"StatelessRandomUniformIntV2", 5, "Need minval < maxval, got 6 >= 5"},
        {"StatelessRandomUniform", 0, "seed must have shape [2], not [3]"},
        {"StatelessRandomUniformInt", 1, "Need minval < maxval, got 5 >= 5"},
        {"StatelessRandomUniformInt", 2, "minval must be 0-D, got shape [1]"},
        {"StatelessRandomUniformFullInt", 3, "Invalid seed type: uint64"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        df_status st;
        df_status_clear(&st);
        df_graph *g = df_graph_new();
        df_node *n = bad_graph(g, &bad[i]);
        df_tensor *r = NULL;
        if (n) {
            df_output y = {n, 0};
            df_session *s = df_session_new(g, NULL, &st);
            if (s) df_session_run(s, NULL, NULL, 0, &y, &r, 1, NULL, 0, &st);
            df_session_free(s);
        } else st = *df_graph_status(g);
        CHECK_MSG(st.code == DF_INVALID_ARGUMENT, "%s (%d): code %d: %s", bad[i].op, bad[i].variant, st.code, st.message);
        CHECK_MSG(strstr(st.message, bad[i].want) != NULL, "%s (%d): message '%s' lacks '%s'", bad[i].op, bad[i].variant,
                  st.message, bad[i].want);
        CHECK_MSG(strstr(st.message, "bad_node") != NULL, "%s (%d): message '%s' does not name the node", bad[i].op,
                  bad[i].variant, st.message);
        df_tensor_release(r);
        df_graph_free(g);
    }
}

/* ---- no gradients (TensorFlow's are None too) ---- */
DF_TEST(random2_ops_have_no_gradient) {
    df_graph *g = df_graph_new();
    double v[4] = {1, 2, 3, 4};
    int64_t d[2] = {2, 2};
    df_output x = constant(g, DF_FLOAT, 2, d, v, NULL);
    unsigned long long two = 2, seed[2] = {1, 2};
    df_op_builder *b = df_op_new(g, "RandomShuffle", NULL);
    df_op_add_input(b, x);
    df_output sh = {df_op_finish(b), 0};
    b = df_op_new(g, "StatelessMultinomial", NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, iconst(g, DF_INT32, 0, 0, &two));
    df_op_add_input(b, iconst(g, DF_INT64, 1, 2, seed));
    df_output mn = {df_op_finish(b), 0};
    df_output ys[2] = {df_reduce_sum(g, sh, 0, NULL, 0), df_reduce_sum(g, df_cast(g, mn, DF_FLOAT), 0, NULL, 0)};
    for (int i = 0; i < 2; i++) {
        df_output dx = {NULL, 0};
        CHECK(df_gradients(g, 1, &ys[i], NULL, 1, &x, &dx) == DF_OK);
        CHECK(dx.node == NULL);
    }
    df_graph_free(g);
}

/* ---- Multinomial with non-finite logits: skipped classes; a row of -inf gives num_classes
   (TensorFlow 2.21's values, seeds (9, 4), output int32, runs 1 and 2 and the stateless op) ---- */
DF_TEST(random2_multinomial_non_finite_logits_match_tf) {
    static const int32_t want[3][18] = {
        {1, 3, 3, 3, 1, 3, 4, 4, 4, 4, 4, 4, 1, 1, 1, 1, 1, 1},
        {1, 3, 3, 3, 1, 1, 4, 4, 4, 4, 4, 4, 1, 3, 1, 1, 1, 1},
        {3, 1, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 1, 1, 1, 1, 1, 1}};
    double inf = INFINITY, nan = NAN;
    double lg[12] = {-inf, 0, -inf, 1, -inf, -inf, -inf, -inf, nan, 2, inf, -1};
    int64_t d[2] = {3, 4};
    for (int k = 0; k < 2; k++) {
        df_status st;
        df_status_clear(&st);
        df_graph *g = df_graph_new();
        unsigned long long six = 6, seed[2] = {9, 4};
        df_op_builder *b = df_op_new(g, k ? "StatelessMultinomial" : "Multinomial", "mn");
        df_op_add_input(b, constant(g, DF_FLOAT, 2, d, lg, NULL));
        df_op_add_input(b, iconst(g, DF_INT32, 0, 0, &six));
        if (k) df_op_add_input(b, iconst(g, DF_INT64, 1, 2, seed));
        else { df_op_set_attr_int(b, "seed", 9); df_op_set_attr_int(b, "seed2", 4); }
        df_op_set_attr_type(b, "output_dtype", DF_INT32);
        df_output y = {df_op_finish(b), 0};
        df_session *s = df_session_new(g, NULL, &st);
        CHECK_OK(&st);
        for (int run = 0; run < (k ? 1 : 2) && s; run++) {
            df_tensor *r = NULL;
            df_session_run(s, NULL, NULL, 0, &y, &r, 1, NULL, 0, &st);
            CHECK_OK(&st);
            if (!r) continue;
            CHECK_EQ_INT(df_tensor_num_elements(r), 18);
            const int32_t *v = (const int32_t *)df_tensor_data(r);
            for (int i = 0; i < 18; i++)
                CHECK_MSG(v[i] == want[k ? 2 : run][i], "%s run %d: sample %d is %d, TF %d", k ? "StatelessMultinomial" : "Multinomial",
                          run + 1, i, v[i], want[k ? 2 : run][i]);
            df_tensor_release(r);
        }
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- unseeded stateful ops: values in range, a permutation, new numbers each run ---- */
DF_TEST(random2_unseeded_ops_stay_in_range_and_change) {
    df_status st;
    df_status_clear(&st);
    df_graph *g = df_graph_new();
    unsigned long long shape = 1000, lo = (unsigned long long)-7, hi = 20;
    df_op_builder *b = df_op_new(g, "RandomUniformInt", "ri");
    df_op_add_input(b, iconst(g, DF_INT32, 1, 1, &shape));
    df_op_add_input(b, iconst(g, DF_INT64, 0, 0, &lo));
    df_op_add_input(b, iconst(g, DF_INT64, 0, 0, &hi));
    df_output ri = {df_op_finish(b), 0};
    double v[1000];
    unsigned long long iv[1000];
    for (int i = 0; i < 1000; i++) { v[i] = i; iv[i] = (unsigned long long)i; }
    int64_t d = 1000;
    b = df_op_new(g, "RandomShuffle", "sh");
    df_op_add_input(b, constant(g, DF_INT32, 1, &d, v, iv));
    df_output sh = {df_op_finish(b), 0};
    df_output outs[2] = {ri, sh};
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    df_tensor *r1[2] = {NULL, NULL}, *r2[2] = {NULL, NULL};
    if (s) {
        df_session_run(s, NULL, NULL, 0, outs, r1, 2, NULL, 0, &st); CHECK_OK(&st);
        df_session_run(s, NULL, NULL, 0, outs, r2, 2, NULL, 0, &st); CHECK_OK(&st);
    }
    if (r1[0] && r1[1] && r2[0] && r2[1]) {
        const int64_t *a = (const int64_t *)df_tensor_data(r1[0]), *a2 = (const int64_t *)df_tensor_data(r2[0]);
        const int32_t *p = (const int32_t *)df_tensor_data(r1[1]), *p2 = (const int32_t *)df_tensor_data(r2[1]);
        int in_range = 1, same_int = 1, same_perm = 1, moved = 0;
        char seen[1000];
        memset(seen, 0, sizeof seen);
        for (int i = 0; i < 1000; i++) {
            in_range &= a[i] >= -7 && a[i] < 20;
            same_int &= a[i] == a2[i];
            same_perm &= p[i] == p2[i];
            moved += p[i] != i;
            if (p[i] >= 0 && p[i] < 1000) seen[p[i]] = 1;
        }
        int perm = 1;
        for (int i = 0; i < 1000; i++) perm &= seen[i];
        CHECK(in_range);
        CHECK(!same_int);
        CHECK(perm);
        CHECK(moved > 900);
        CHECK(!same_perm);
    } else CHECK(0);
    for (int i = 0; i < 2; i++) { df_tensor_release(r1[i]); df_tensor_release(r2[i]); }
    df_session_free(s);
    df_graph_free(g);
}
