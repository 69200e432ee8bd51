/* test_random.c - RandomUniform, RandomStandardNormal and TruncatedNormal with seed or seed2 set
   give TensorFlow 2.21's CPU numbers bit for bit (float and double, several shapes and seeds),
   on a session's first run and on its second run. The expected values came from TensorFlow
   (tf.raw_ops.<Op>(shape, dtype, seed, seed2) in a graph-mode Session, run twice): the first
   three and last two elements' bit patterns and a checksum of all of them, sum of bits(i) * (i + 1)
   mod 2^64 over the flattened tensor. Public API and the harness only. */
#include "harness.h"
#include <stdint.h>
#include <string.h>

typedef struct {
    int op, dtype, rank;
    int32_t dims[3];
    long long seed, seed2;
    int nfirst;                  /* first elements given (min(3, n)) */
    uint64_t sum1, sum2;         /* checksums of run 1 and run 2 */
    uint64_t first[3], last[2];  /* bit patterns of run 1 */
} ref_case;

static const char *const op_names[3] = {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"};

static const ref_case cases[] = {
    {0, DF_FLOAT, 1, {1}, 1ll, 0ll, 1, 0x3f500ce0ull, 0x3f06fc6eull, {0x3f500ce0ull, 0x0ull, 0x0ull}, {0x0ull, 0x3f500ce0ull}},
    {0, DF_FLOAT, 1, {1}, 0ll, 7ll, 1, 0x3f78b7baull, 0x3f47676eull, {0x3f78b7baull, 0x0ull, 0x0ull}, {0x0ull, 0x3f78b7baull}},
    {0, DF_FLOAT, 1, {1}, 42ll, 123ll, 1, 0x3e9e08bcull, 0x3f1fa936ull, {0x3e9e08bcull, 0x0ull, 0x0ull}, {0x0ull, 0x3e9e08bcull}},
    {0, DF_FLOAT, 1, {1}, -5ll, 9876543210ll, 1, 0x3f513640ull, 0x3efdddecull, {0x3f513640ull, 0x0ull, 0x0ull}, {0x0ull, 0x3f513640ull}},
    {0, DF_FLOAT, 1, {7}, 1ll, 0ll, 3, 0x6d8468afaull, 0x6e20e4bdaull, {0x3f500ce0ull, 0x3da0ebc0ull, 0x3f644580ull}, {0x3f0b997cull, 0x3f00f48eull}},
    {0, DF_FLOAT, 1, {7}, 0ll, 7ll, 3, 0x6ea4b722aull, 0x6e474fb6aull, {0x3f78b7baull, 0x3f384a82ull, 0x3f3fa3e6ull}, {0x3f558f22ull, 0x3f1a1344ull}},
    {0, DF_FLOAT, 1, {7}, 42ll, 123ll, 3, 0x6d728084aull, 0x6d654bd7aull, {0x3e9e08bcull, 0x3ece6448ull, 0x3d896b30ull}, {0x3f15ba88ull, 0x3da7d030ull}},
    {0, DF_FLOAT, 1, {7}, -5ll, 9876543210ll, 3, 0x6dc22b084ull, 0x6e5035428ull, {0x3f513640ull, 0x3f76911cull, 0x3ef81accull}, {0x3f596efeull, 0x3dad5ad0ull}},
    {0, DF_FLOAT, 1, {1000}, 1ll, 0ll, 3, 0x1ded741636ec8ull, 0x1dfa2902e96dcull, {0x3f500ce0ull, 0x3da0ebc0ull, 0x3f644580ull}, {0x3ef50140ull, 0x3ea09944ull}},
    {0, DF_FLOAT, 1, {1000}, 0ll, 7ll, 3, 0x1df3ac85f9c0aull, 0x1df22e89a7e80ull, {0x3f78b7baull, 0x3f384a82ull, 0x3f3fa3e6ull}, {0x3f1337daull, 0x3eb2a4c4ull}},
    {0, DF_FLOAT, 1, {1000}, 42ll, 123ll, 3, 0x1def8230eacccull, 0x1df23f873fd22ull, {0x3e9e08bcull, 0x3ece6448ull, 0x3d896b30ull}, {0x3e705218ull, 0x3f002250ull}},
    {0, DF_FLOAT, 1, {1000}, -5ll, 9876543210ll, 3, 0x1df4a31b54816ull, 0x1df04269ba8b0ull, {0x3f513640ull, 0x3f76911cull, 0x3ef81accull}, {0x3ed70ce0ull, 0x3f321ba8ull}},
    {0, DF_FLOAT, 3, {2, 3, 5}, 1ll, 0ll, 3, 0x71bda084daull, 0x71a5d86afeull, {0x3f500ce0ull, 0x3da0ebc0ull, 0x3f644580ull}, {0x3dea8fd0ull, 0x3eb01c54ull}},
    {0, DF_FLOAT, 3, {2, 3, 5}, 0ll, 7ll, 3, 0x7258e3ad1aull, 0x7261808212ull, {0x3f78b7baull, 0x3f384a82ull, 0x3f3fa3e6ull}, {0x3f32bfa4ull, 0x3f1ef19cull}},
    {0, DF_FLOAT, 3, {2, 3, 5}, 42ll, 123ll, 3, 0x726121d2d6ull, 0x724a6234f6ull, {0x3e9e08bcull, 0x3ece6448ull, 0x3d896b30ull}, {0x3ed039c4ull, 0x3f49fa1aull}},
    {0, DF_FLOAT, 3, {2, 3, 5}, -5ll, 9876543210ll, 3, 0x72259b7ff6ull, 0x720dba9b60ull, {0x3f513640ull, 0x3f76911cull, 0x3ef81accull}, {0x3f2996acull, 0x3eae15acull}},
    {0, DF_DOUBLE, 1, {1}, 1ll, 0ll, 1, 0x3fe00ce1ca141d78ull, 0x3fcbf1b92a943118ull, {0x3fe00ce1ca141d78ull, 0x0ull, 0x0ull}, {0x0ull, 0x3fe00ce1ca141d78ull}},
    {0, DF_DOUBLE, 1, {1}, 0ll, 7ll, 1, 0x3fe8b7bb2cb84a82ull, 0x3fcd9dba1fbf8650ull, {0x3fe8b7bb2cb84a82ull, 0x0ull, 0x0ull}, {0x0ull, 0x3fe8b7bb2cb84a82ull}},
    {0, DF_DOUBLE, 1, {1}, 42ll, 123ll, 1, 0x3fde08bf50ce6448ull, 0x3fefa93668e98620ull, {0x3fde08bf50ce6448ull, 0x0ull, 0x0ull}, {0x0ull, 0x3fde08bf50ce6448ull}},
    {0, DF_DOUBLE, 1, {1}, -5ll, 9876543210ll, 1, 0x3fe13640baf6911cull, 0x3feeeef7c17c327aull, {0x3fe13640baf6911cull, 0x0ull, 0x0ull}, {0x0ull, 0x3fe13640baf6911cull}},
    {0, DF_DOUBLE, 1, {7}, 1ll, 0ll, 3, 0xfaf071f49cbd0708ull, 0xfc989e8937aae114ull, {0x3fe00ce1ca141d78ull, 0x3fc11605b0ad5138ull, 0x3fe02837bf8b997cull}, {0x3fef551dd7da6cecull, 0x3fce7d084ad77b20ull}},
    {0, DF_DOUBLE, 1, {7}, 0ll, 7ll, 3, 0xfd2c9bba31cb5786ull, 0xfb17c15e4de59100ull, {0x3fe8b7bb2cb84a82ull, 0x3fefa3e66378d162ull, 0x3fdb85370dab1e44ull}, {0x3fd7363c3aade3e0ull, 0x3fefacdaa2c5ec3aull}},
    {0, DF_DOUBLE, 1, {7}, 42ll, 123ll, 3, 0xfb0201b0f78c100cull, 0xfc9997ec416f8b00ull, {0x3fde08bf50ce6448ull, 0x3fe12d666b7e009cull, 0x3fa9336bb95ba880ull}, {0x3fc72374033ac968ull, 0x3fdc43d140cd8e50ull}},
    {0, DF_DOUBLE, 1, {7}, -5ll, 9876543210ll, 3, 0xfbc5e0ac7f81c540ull, 0xfa972fd0b0dfd868ull, {0x3fe13640baf6911cull, 0x3fec0d66795f0d52ull, 0x3fd5e7e7ffb2ddfcull}, {0x3fb7b09af96e7ca0ull, 0x3fe66cc62a058084ull}},
    {0, DF_DOUBLE, 1, {1000}, 1ll, 0ll, 3, 0x5dadaa157c157100ull, 0x4a1df8106be1d916ull, {0x3fe00ce1ca141d78ull, 0x3fc11605b0ad5138ull, 0x3fe02837bf8b997cull}, {0x3fb8e24a993ea3d0ull, 0x3fafda1ebeab9120ull}},
    {0, DF_DOUBLE, 1, {1000}, 0ll, 7ll, 3, 0x9c06e5220e2955f4ull, 0x946a3d0035401f74ull, {0x3fe8b7bb2cb84a82ull, 0x3fefa3e66378d162ull, 0x3fdb85370dab1e44ull}, {0x3fdb604dfd5ec494ull, 0x3fb1effaea7fb150ull}},
    {0, DF_DOUBLE, 1, {1000}, 42ll, 123ll, 3, 0xee5f47e0f9c6d012ull, 0x5c6fbd1b0722d8f0ull, {0x3fde08bf50ce6448ull, 0x3fe12d666b7e009cull, 0x3fa9336bb95ba880ull}, {0x3fa608e0b00792e0ull, 0x3fe2aa1a9a62097cull}},
    {0, DF_DOUBLE, 1, {1000}, -5ll, 9876543210ll, 3, 0xde10aade5f274364ull, 0x6c833deec54044d4ull, {0x3fe13640baf6911cull, 0x3fec0d66795f0d52ull, 0x3fd5e7e7ffb2ddfcull}, {0x3fd89204b41caf3cull, 0x3feff3eda2120eacull}},
    {0, DF_DOUBLE, 3, {2, 3, 5}, 1ll, 0ll, 3, 0xf1ae437c36772120ull, 0x3d344e896bc0aa6ull, {0x3fe00ce1ca141d78ull, 0x3fc11605b0ad5138ull, 0x3fe02837bf8b997cull}, {0x3fb21b3d3ce195d0ull, 0x3fe3a8b0ea91c86cull}},
    {0, DF_DOUBLE, 3, {2, 3, 5}, 0ll, 7ll, 3, 0xf8ca75da8c8ee87eull, 0xf50a9b77b48def0eull, {0x3fe8b7bb2cb84a82ull, 0x3fefa3e66378d162ull, 0x3fdb85370dab1e44ull}, {0x3fe5dd511cfe346cull, 0x3fad85d53ace9860ull}},
    {0, DF_DOUBLE, 3, {2, 3, 5}, 42ll, 123ll, 3, 0xed860eeef9c12e14ull, 0x1a5a63155ef9520ull, {0x3fde08bf50ce6448ull, 0x3fe12d666b7e009cull, 0x3fa9336bb95ba880ull}, {0x3fd23d650b5f9034ull, 0x3facb97857247180ull}},
    {0, DF_DOUBLE, 3, {2, 3, 5}, -5ll, 9876543210ll, 3, 0xee40e8a1266fbc94ull, 0xe86e3364596f1e4cull, {0x3fe13640baf6911cull, 0x3fec0d66795f0d52ull, 0x3fd5e7e7ffb2ddfcull}, {0x3fee4a18f1920b26ull, 0x3fef4276255d6facull}},
    {1, DF_FLOAT, 1, {1}, 1ll, 0ll, 1, 0x3e9c43caull, 0xbf648a47ull, {0x3e9c43caull, 0x0ull, 0x0ull}, {0x0ull, 0x3e9c43caull}},
    {1, DF_FLOAT, 1, {1}, 0ll, 7ll, 1, 0xbe719f09ull, 0xbe8b7a51ull, {0xbe719f09ull, 0x0ull, 0x0ull}, {0x0ull, 0xbe719f09ull}},
    {1, DF_FLOAT, 1, {1}, 42ll, 123ll, 1, 0x3f60797aull, 0xbf025f99ull, {0x3f60797aull, 0x0ull, 0x0ull}, {0x0ull, 0x3f60797aull}},
    {1, DF_FLOAT, 1, {1}, -5ll, 9876543210ll, 1, 0xbe154921ull, 0x3de216a9ull, {0xbe154921ull, 0x0ull, 0x0ull}, {0x0ull, 0xbe154921ull}},
    {1, DF_FLOAT, 1, {7}, 1ll, 0ll, 3, 0xfe8649e08ull, 0xadb1b6d1bull, {0x3e9c43caull, 0x3f112ff1ull, 0x3ed6489cull}, {0xc0106311ull, 0xbf086721ull}},
    {1, DF_FLOAT, 1, {7}, 0ll, 7ll, 3, 0xcdb7143d2ull, 0xfe9739daaull, {0xbe719f09ull, 0xbd391425ull, 0x3e08a768ull}, {0x3e46be57ull, 0x3f7f2bfaull}},
    {1, DF_FLOAT, 1, {7}, 42ll, 123ll, 3, 0xf666a4df9ull, 0xeec8f88aaull, {0x3f60797aull, 0xbfa100d2ull, 0x3de94f66ull}, {0xbf24d379ull, 0x3f023797ull}},
    {1, DF_FLOAT, 1, {7}, -5ll, 9876543210ll, 3, 0xf6fb86360ull, 0xadc07d3a2ull, {0xbe154921ull, 0x3f1e4ec8ull, 0x3f5ee846ull}, {0x3f45afa1ull, 0xbfcea36cull}},
    {1, DF_FLOAT, 1, {1000}, 1ll, 0ll, 3, 0x3b8c894a856f4ull, 0x3d60ab5e0a434ull, {0x3e9c43caull, 0x3f112ff1ull, 0x3ed6489cull}, {0x3f8f231bull, 0xbef219ceull}},
    {1, DF_FLOAT, 1, {1000}, 0ll, 7ll, 3, 0x3d9f872f19a1dull, 0x3c608be58d569ull, {0xbe719f09ull, 0xbd391425ull, 0x3e08a768ull}, {0x3f5aef96ull, 0xbf1ccb24ull}},
    {1, DF_FLOAT, 1, {1000}, 42ll, 123ll, 3, 0x3c5ba03aa6163ull, 0x3d0925029c352ull, {0x3f60797aull, 0xbfa100d2ull, 0x3de94f66ull}, {0xbbb78b51ull, 0xbfd9efedull}},
    {1, DF_FLOAT, 1, {1000}, -5ll, 9876543210ll, 3, 0x3daaa7db6045dull, 0x3b4ea27f36f1dull, {0xbe154921ull, 0x3f1e4ec8ull, 0x3f5ee846ull}, {0xbf9ee40eull, 0xbee1824aull}},
    {1, DF_FLOAT, 3, {2, 3, 5}, 1ll, 0ll, 3, 0xf1eb86cba3ull, 0xc2309ca1a6ull, {0x3e9c43caull, 0x3f112ff1ull, 0x3ed6489cull}, {0x3fdd5bc4ull, 0xbf94579aull}},
    {1, DF_FLOAT, 3, {2, 3, 5}, 0ll, 7ll, 3, 0x10f501336c0ull, 0x1094ccbd5cdull, {0xbe719f09ull, 0xbd391425ull, 0x3e08a768ull}, {0xbf15666full, 0xbf1d5aa0ull}},
    {1, DF_FLOAT, 3, {2, 3, 5}, 42ll, 123ll, 3, 0x10670233cf8ull, 0x10ad8eb868bull, {0x3f60797aull, 0xbfa100d2ull, 0x3de94f66ull}, {0xbfa6945aull, 0x3ea680f4ull}},
    {1, DF_FLOAT, 3, {2, 3, 5}, -5ll, 9876543210ll, 3, 0xc8f2278bacull, 0xe6b6e80404ull, {0xbe154921ull, 0x3f1e4ec8ull, 0x3f5ee846ull}, {0x3f442723ull, 0xbef8ff0aull}},
    {1, DF_DOUBLE, 1, {1}, 1ll, 0ll, 1, 0x3febf5bf7586beacull, 0xbfbc02e5eb7f64f9ull, {0x3febf5bf7586beacull, 0x0ull, 0x0ull}, {0x0ull, 0x3febf5bf7586beacull}},
    {1, DF_DOUBLE, 1, {1}, 0ll, 7ll, 1, 0xbfa9f837f4b5ff24ull, 0x3ff85e4a50ef830dull, {0xbfa9f837f4b5ff24ull, 0x0ull, 0x0ull}, {0x0ull, 0xbfa9f837f4b5ff24ull}},
    {1, DF_DOUBLE, 1, {1}, 42ll, 123ll, 1, 0xbfd2098bd7b1356aull, 0xbf972409eb5b5443ull, {0xbfd2098bd7b1356aull, 0x0ull, 0x0ull}, {0x0ull, 0xbfd2098bd7b1356aull}},
    {1, DF_DOUBLE, 1, {1}, -5ll, 9876543210ll, 1, 0xbfe8f0703053e18eull, 0xbf9cd4431a1f52e1ull, {0xbfe8f0703053e18eull, 0x0ull, 0x0ull}, {0x0ull, 0xbfe8f0703053e18eull}},
    {1, DF_DOUBLE, 1, {7}, 1ll, 0ll, 3, 0x7d79ef3003c6b432ull, 0xfd2e0f5b316924e9ull, {0x3febf5bf7586beacull, 0x3fe9208f6703e30dull, 0x3fcbe7a6704fa3a4ull}, {0x3ff6c903797aaa72ull, 0x3ffb1779db8b6dc7ull}},
    {1, DF_DOUBLE, 1, {7}, 0ll, 7ll, 3, 0xfb201fb6a053fe14ull, 0x7c39ed934bcfc44cull, {0xbfa9f837f4b5ff24ull, 0x3fe6f05af502fc6dull, 0xbff315cd4bbbb422ull}, {0xbfdb703caa45709aull, 0x3faee8a14669121bull}},
    {1, DF_DOUBLE, 1, {7}, 42ll, 123ll, 3, 0xfe6c49d12a430302ull, 0x7d922ed45e076b06ull, {0xbfd2098bd7b1356aull, 0xbff3286064004dddull, 0xc0004639f065b0aeull}, {0x3fe4cbfd4fcd72acull, 0x3ff45e79538911b4ull}},
    {1, DF_DOUBLE, 1, {7}, -5ll, 9876543210ll, 3, 0xfd73977fe37522c8ull, 0x7e25ad6325c27c37ull, {0xbfe8f0703053e18eull, 0x3fe9750aff065f07ull, 0xbff504bdb12c73adull}, {0x3ff03d3cfcdc1a68ull, 0x3fe1630b7ad6b550ull}},
    {1, DF_DOUBLE, 1, {1000}, 1ll, 0ll, 3, 0x8b3f4a9313e54f83ull, 0xd157c0717629f347ull, {0x3febf5bf7586beacull, 0x3fe9208f6703e30dull, 0x3fcbe7a6704fa3a4ull}, {0x3fea531cd0d7feeeull, 0x3ffff0caf7e72e48ull}},
    {1, DF_DOUBLE, 1, {1000}, 0ll, 7ll, 3, 0x77a7e6435fa92bd9ull, 0xefeccb26a3a90cedull, {0xbfa9f837f4b5ff24ull, 0x3fe6f05af502fc6dull, 0xbff315cd4bbbb422ull}, {0x3fe1c5ca220915efull, 0x3ff2dd095889fa0full}},
    {1, DF_DOUBLE, 1, {1000}, 42ll, 123ll, 3, 0xeae0d32d3cc1b24ull, 0xe776f23967b15ebfull, {0xbfd2098bd7b1356aull, 0xbff3286064004dddull, 0xc0004639f065b0aeull}, {0xbff40d182dfc5768ull, 0xc00161d31afbb16full}},
    {1, DF_DOUBLE, 1, {1000}, -5ll, 9876543210ll, 3, 0x4686b3ff9d584f83ull, 0x7f008093d076d3ffull, {0xbfe8f0703053e18eull, 0x3fe9750aff065f07ull, 0xbff504bdb12c73adull}, {0xbf8a3cf32632d0ffull, 0x3ff62379f326d4ffull}},
    {1, DF_DOUBLE, 3, {2, 3, 5}, 1ll, 0ll, 3, 0xfef0d6c1f34477aull, 0x84c1dd405491ffcdull, {0x3febf5bf7586beacull, 0x3fe9208f6703e30dull, 0x3fcbe7a6704fa3a4ull}, {0xbff83d68bb2be030ull, 0xbffbb9943e89eb11ull}},
    {1, DF_DOUBLE, 3, {2, 3, 5}, 0ll, 7ll, 3, 0x7f95245154322997ull, 0xfe3ead5a44ccea59ull, {0xbfa9f837f4b5ff24ull, 0x3fe6f05af502fc6dull, 0xbff315cd4bbbb422ull}, {0x3fd3cc22463e4aceull, 0x3fea1daa10bd61f6ull}},
    {1, DF_DOUBLE, 3, {2, 3, 5}, 42ll, 123ll, 3, 0x9418a0a69c105609ull, 0x7b58d1d568835c08ull, {0xbfd2098bd7b1356aull, 0xbff3286064004dddull, 0xc0004639f065b0aeull}, {0x3fe1814fc5a69e81ull, 0x3ff7caf02d124868ull}},
    {1, DF_DOUBLE, 3, {2, 3, 5}, -5ll, 9876543210ll, 3, 0x7bc669d2d7b48a04ull, 0xf048d37001be3a5ull, {0xbfe8f0703053e18eull, 0x3fe9750aff065f07ull, 0xbff504bdb12c73adull}, {0xbfa895cba37bfe14ull, 0x3fd4fd8aee64fdc6ull}},
    {2, DF_FLOAT, 1, {1}, 1ll, 0ll, 1, 0x3e9c43caull, 0xbf648a47ull, {0x3e9c43caull, 0x0ull, 0x0ull}, {0x0ull, 0x3e9c43caull}},
    {2, DF_FLOAT, 1, {1}, 0ll, 7ll, 1, 0xbe719f09ull, 0xbe8b7a51ull, {0xbe719f09ull, 0x0ull, 0x0ull}, {0x0ull, 0xbe719f09ull}},
    {2, DF_FLOAT, 1, {1}, 42ll, 123ll, 1, 0x3f60797aull, 0xbf025f99ull, {0x3f60797aull, 0x0ull, 0x0ull}, {0x0ull, 0x3f60797aull}},
    {2, DF_FLOAT, 1, {1}, -5ll, 9876543210ll, 1, 0xbe154921ull, 0x3de216a9ull, {0xbe154921ull, 0x0ull, 0x0ull}, {0x0ull, 0xbe154921ull}},
    {2, DF_FLOAT, 1, {7}, 1ll, 0ll, 3, 0xfd325c28eull, 0xade0a6abfull, {0x3e9c43caull, 0x3f112ff1ull, 0x3ed6489cull}, {0xbf31ec0full, 0xbc939733ull}},
    {2, DF_FLOAT, 1, {7}, 0ll, 7ll, 3, 0x10567a4e35ull, 0x9de02dd1aull, {0xbe719f09ull, 0xbd391425ull, 0x3e08a768ull}, {0x3f26fc3dull, 0xbe1f277dull}},
    {2, DF_FLOAT, 1, {7}, 42ll, 123ll, 3, 0xfea5c0354ull, 0xb6368012full, {0x3f60797aull, 0xbfa100d2ull, 0x3de94f66ull}, {0x3f53dc6eull, 0xbffdbb0dull}},
    {2, DF_FLOAT, 1, {7}, -5ll, 9876543210ll, 3, 0xc69dc708full, 0xbe488b182ull, {0xbe154921ull, 0x3f1e4ec8ull, 0x3f5ee846ull}, {0xbf96f49bull, 0x3fe0f01full}},
    {2, DF_FLOAT, 1, {1000}, 1ll, 0ll, 3, 0x3d60105517924ull, 0x3b67ad0812880ull, {0x3e9c43caull, 0x3f112ff1ull, 0x3ed6489cull}, {0xbf74664dull, 0x3f72867dull}},
    {2, DF_FLOAT, 1, {1000}, 0ll, 7ll, 3, 0x3d118756126e7ull, 0x3e30cb4f57aabull, {0xbe719f09ull, 0xbd391425ull, 0x3e08a768ull}, {0x3f386062ull, 0x3d16092eull}},
    {2, DF_FLOAT, 1, {1000}, 42ll, 123ll, 3, 0x3c46d07ce4ea9ull, 0x3b3bf5f30b773ull, {0x3f60797aull, 0xbfa100d2ull, 0x3de94f66ull}, {0xbfaefff3ull, 0xbf3e303bull}},
    {2, DF_FLOAT, 1, {1000}, -5ll, 9876543210ll, 3, 0x3aed09d6ddb54ull, 0x3beaced2ef0a2ull, {0xbe154921ull, 0x3f1e4ec8ull, 0x3f5ee846ull}, {0xbf1b0516ull, 0xbfb1f985ull}},
    {2, DF_FLOAT, 3, {2, 3, 5}, 1ll, 0ll, 3, 0xee9da3e0abull, 0xe9d68c0dceull, {0x3e9c43caull, 0x3f112ff1ull, 0x3ed6489cull}, {0x3e4c31afull, 0xbfca3155ull}},
    {2, DF_FLOAT, 3, {2, 3, 5}, 0ll, 7ll, 3, 0x108561926f5ull, 0xc186547329ull, {0xbe719f09ull, 0xbd391425ull, 0x3e08a768ull}, {0xbf110fc4ull, 0xbfa44447ull}},
    {2, DF_FLOAT, 3, {2, 3, 5}, 42ll, 123ll, 3, 0xdb0d5d394aull, 0xeee5821f31ull, {0x3f60797aull, 0xbfa100d2ull, 0x3de94f66ull}, {0x3f0607b1ull, 0xbf67f602ull}},
    {2, DF_FLOAT, 3, {2, 3, 5}, -5ll, 9876543210ll, 3, 0xcc0e73284aull, 0xf47cc0fe28ull, {0xbe154921ull, 0x3f1e4ec8ull, 0x3f5ee846ull}, {0x3ece0cecull, 0x3f8a7606ull}},
    {2, DF_DOUBLE, 1, {1}, 1ll, 0ll, 1, 0x3febf5bf7586beacull, 0xbfbc02e5eb7f64f9ull, {0x3febf5bf7586beacull, 0x0ull, 0x0ull}, {0x0ull, 0x3febf5bf7586beacull}},
    {2, DF_DOUBLE, 1, {1}, 0ll, 7ll, 1, 0xbfa9f837f4b5ff24ull, 0x3ff85e4a50ef830dull, {0xbfa9f837f4b5ff24ull, 0x0ull, 0x0ull}, {0x0ull, 0xbfa9f837f4b5ff24ull}},
    {2, DF_DOUBLE, 1, {1}, 42ll, 123ll, 1, 0xbfd2098bd7b1356aull, 0xbf972409eb5b5443ull, {0xbfd2098bd7b1356aull, 0x0ull, 0x0ull}, {0x0ull, 0xbfd2098bd7b1356aull}},
    {2, DF_DOUBLE, 1, {1}, -5ll, 9876543210ll, 1, 0xbfe8f0703053e18eull, 0xbf9cd4431a1f52e1ull, {0xbfe8f0703053e18eull, 0x0ull, 0x0ull}, {0x0ull, 0xbfe8f0703053e18eull}},
    {2, DF_DOUBLE, 1, {7}, 1ll, 0ll, 3, 0x7d5528e8c2a1c429ull, 0xfd90fb59e55a0d18ull, {0x3febf5bf7586beacull, 0x3fe9208f6703e30dull, 0x3ff624caff0423feull}, {0x3ffbdbd315f4a8dbull, 0x3fe57c1fb8b6ac8aull}},
    {2, DF_DOUBLE, 1, {7}, 0ll, 7ll, 3, 0xfd5801508d88c454ull, 0xfcbf949597e51c29ull, {0xbfa9f837f4b5ff24ull, 0x3fe6f05af502fc6dull, 0xbff2b314f3c63964ull}, {0xbfe8f2c7a4de40efull, 0x3feaaab0a7a23969ull}},
    {2, DF_DOUBLE, 1, {7}, 42ll, 123ll, 3, 0x7b5b0eff76964b38ull, 0x7bbaa161a9fe9e4bull, {0xbfd2098bd7b1356aull, 0xbff3286064004dddull, 0x3fcccaa168474fcbull}, {0x3fc274cf8872be51ull, 0xbff8db2f0c7a4342ull}},
    {2, DF_DOUBLE, 1, {7}, -5ll, 9876543210ll, 3, 0x7afb7bec1fb56881ull, 0xfd8cffb99af64ae9ull, {0xbfe8f0703053e18eull, 0x3fe9750aff065f07ull, 0xbfe31f245b478931ull}, {0xbfd090f31bb7251bull, 0x3feeb3115ced35e5ull}},
    {2, DF_DOUBLE, 1, {1000}, 1ll, 0ll, 3, 0x3eec5b5a7865c179ull, 0xca571f5b524f60d9ull, {0x3febf5bf7586beacull, 0x3fe9208f6703e30dull, 0x3ff624caff0423feull}, {0xbff1dc7561a0ff07ull, 0xbff90d823ccfe635ull}},
    {2, DF_DOUBLE, 1, {1000}, 0ll, 7ll, 3, 0xa70a66257adca7faull, 0x911b944e21c25b19ull, {0xbfa9f837f4b5ff24ull, 0x3fe6f05af502fc6dull, 0xbff2b314f3c63964ull}, {0xbfecdf8605ab5e76ull, 0xbfe4acfc35581db7ull}},
    {2, DF_DOUBLE, 1, {1000}, 42ll, 123ll, 3, 0x61b26257814607eeull, 0x6d7b227608e31ac4ull, {0xbfd2098bd7b1356aull, 0xbff3286064004dddull, 0x3fcccaa168474fcbull}, {0xbfe19ac26d6350e7ull, 0x3ff232922c579802ull}},
    {2, DF_DOUBLE, 1, {1000}, -5ll, 9876543210ll, 3, 0xf326f1282512a086ull, 0x1dfcd789424cf13cull, {0xbfe8f0703053e18eull, 0x3fe9750aff065f07ull, 0xbfe31f245b478931ull}, {0xbfec70d60d2f4f5aull, 0x3fff54c15ac4c850ull}},
    {2, DF_DOUBLE, 3, {2, 3, 5}, 1ll, 0ll, 3, 0x1509984fd08ae4full, 0x43bb86954c08423ull, {0x3febf5bf7586beacull, 0x3fe9208f6703e30dull, 0x3ff624caff0423feull}, {0xbff8bf95562d0e75ull, 0xbfe3403f3df2320aull}},
    {2, DF_DOUBLE, 3, {2, 3, 5}, 0ll, 7ll, 3, 0x20a919fd2faf70cull, 0x11af39a0de3f1675ull, {0xbfa9f837f4b5ff24ull, 0x3fe6f05af502fc6dull, 0xbff2b314f3c63964ull}, {0x3fb6d16674710607ull, 0x3fbb250a71dfdfb8ull}},
    {2, DF_DOUBLE, 3, {2, 3, 5}, 42ll, 123ll, 3, 0x869bf223bda4a32eull, 0x25dcba60bf1cc35ull, {0xbfd2098bd7b1356aull, 0xbff3286064004dddull, 0x3fcccaa168474fcbull}, {0xbfe97505f75f6467ull, 0x3fe18f9acafea1ceull}},
    {2, DF_DOUBLE, 3, {2, 3, 5}, -5ll, 9876543210ll, 3, 0x71a3660e1050c191ull, 0xc28fb3418268a43ull, {0xbfe8f0703053e18eull, 0x3fe9750aff065f07ull, 0xbfe31f245b478931ull}, {0xbff5693c6b6898cbull, 0x3ff9ed5914ae6a0eull}},
};

static uint64_t bits_at(const df_tensor *t, int64_t i) {
    if (df_tensor_dtype(t) == DF_FLOAT) {
        uint32_t u;
        memcpy(&u, (const char *)df_tensor_data(t) + 4 * i, 4);
        return u;
    }
    uint64_t u;
    memcpy(&u, (const char *)df_tensor_data(t) + 8 * i, 8);
    return u;
}

static uint64_t checksum(const df_tensor *t) {
    uint64_t s = 0;
    int64_t n = df_tensor_num_elements(t);
    for (int64_t i = 0; i < n; i++) s += bits_at(t, i) * (uint64_t)(i + 1);
    return s;
}

/* Runs case c twice in one session; checks both runs against TensorFlow's. */
static void check_case(const ref_case *c) {
    df_status st;
    df_status_clear(&st);
    df_graph *g = df_graph_new();
    CHECK(g != NULL);
    if (!g) return;
    int64_t rd = c->rank;
    df_tensor *shape = df_tensor_new(DF_INT32, 1, &rd, &st);
    CHECK_OK(&st);
    if (!shape) { df_graph_free(g); return; }
    memcpy(df_tensor_data(shape), c->dims, sizeof(int32_t) * (size_t)c->rank);
    df_output sh = df_const(g, shape);
    df_tensor_release(shape);
    df_op_builder *b = df_op_new(g, op_names[c->op], NULL);
    df_op_add_input(b, sh);
    df_op_set_attr_type(b, "dtype", (df_dtype)c->dtype);
    df_op_set_attr_int(b, "seed", c->seed);
    df_op_set_attr_int(b, "seed2", c->seed2);
    df_output y = {df_op_finish(b), 0};
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    df_tensor *r1 = NULL, *r2 = NULL;
    if (s) {
        df_session_run(s, NULL, NULL, 0, &y, &r1, 1, NULL, 0, &st); CHECK_OK(&st);
        df_session_run(s, NULL, NULL, 0, &y, &r2, 1, NULL, 0, &st); CHECK_OK(&st);
    }
    int64_t n = 1;
    for (int d = 0; d < c->rank; d++) n *= c->dims[d];
    const char *dt = c->dtype == DF_FLOAT ? "float" : "double";
    if (r1 && r2) {
        CHECK_EQ_INT(df_tensor_num_elements(r1), n);
        CHECK_EQ_INT(df_tensor_dtype(r1), c->dtype);
        for (int i = 0; i < c->nfirst; i++)
            CHECK_MSG(bits_at(r1, i) == c->first[i], "%s %s n=%lld seeds (%lld, %lld): element %d bits 0x%llx, TF 0x%llx",
                      op_names[c->op], dt, (long long)n, c->seed, c->seed2, i,
                      (unsigned long long)bits_at(r1, i), (unsigned long long)c->first[i]);
        for (int i = 0; i < 2; i++) {
            int64_t k = n - 2 + i;
            if (k < 0) continue;
            CHECK_MSG(bits_at(r1, k) == c->last[i], "%s %s n=%lld seeds (%lld, %lld): element %lld bits 0x%llx, TF 0x%llx",
                      op_names[c->op], dt, (long long)n, c->seed, c->seed2, (long long)k,
                      (unsigned long long)bits_at(r1, k), (unsigned long long)c->last[i]);
        }
        CHECK_MSG(checksum(r1) == c->sum1, "%s %s n=%lld seeds (%lld, %lld): run 1 differs from TF",
                  op_names[c->op], dt, (long long)n, c->seed, c->seed2);
        CHECK_MSG(checksum(r2) == c->sum2, "%s %s n=%lld seeds (%lld, %lld): run 2 differs from TF",
                  op_names[c->op], dt, (long long)n, c->seed, c->seed2);
    } else CHECK(r1 && r2);
    df_tensor_release(r1); df_tensor_release(r2);
    df_session_free(s);
    df_graph_free(g);
}

static void check_op(int op) {
    int ncases = (int)(sizeof cases / sizeof cases[0]), seen = 0;
    for (int i = 0; i < ncases; i++)
        if (cases[i].op == op) { check_case(&cases[i]); seen++; }
    CHECK(seen == 32);
}

DF_TEST(random_uniform_matches_tf) { check_op(0); }
DF_TEST(random_normal_matches_tf) { check_op(1); }
DF_TEST(random_truncated_normal_matches_tf) { check_op(2); }
