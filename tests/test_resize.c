/* test_resize.c - ResizeBilinear, ResizeBilinearGrad, ResizeNearestNeighbor and
   ResizeNearestNeighborGrad (src/kernels/resize.c): values against what TensorFlow 2.21 printed
   for the same inputs (tf.raw_ops, eager) for align_corners / half_pixel_centers (0,0), (1,0),
   (0,1) (and (1,1) where TensorFlow accepts it), upsampling and downsampling, sizes of 1 and
   the same size; uint8, half, int64, int32 and double images; 10 channels (the vectorized
   blocks); large images split between intra-op threads, against TensorFlow's weighted sums;
   the gradients against central differences in float64; bad inputs' statuses naming the
   node. Public API and the harness only. */
#include "harness.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define D(...) ((const int64_t[]){__VA_ARGS__})

/* ---- TensorFlow 2.21's numbers: X[i] = (7i mod 11) - 3.5 + i/8 on [1,3,4,2];
   DY[i] = (5i mod 7) / 2 - 1.25 + i/100 on the resized shape ---- */
/* ResizeBilinear / ResizeNearestNeighbor of X [1,3,4,2] to [5,7] and [2,3]: align_corners, half_pixel_centers (0,0), (1,0), (0,1) */
static const double BL_W[3][2][70] = {
    {{-3.5, 3.625, -1.64285707, 5.48214293, 0.21428588, 5.7678566, 2.07142901, 1.3392849, 3.9285717, 0.0535717607, 5.78571463, 1.91071463, 6.25, 2.375, -2.29999995, 4.82499981, -0.442857027, 2.91071415, 1.4142859, 1.31071377, 3.27142906, 0.653571367, 5.12857151, 1.25357175, 6.98571491, 3.11071467, 7.44999981, 3.57500005, -1.0999999, 6.0250001, 0.757143021, 1.59642839, 2.61428595, -1.26071405, 4.47142935, 0.59642911, 5.69999981, 2.4535718, 6.29999971, 4.31071472, 6.44999981, 4.7750001, 0.100000143, 7.22500038, 1.95714307, 2.79642844, 3.81428599, -0.0607140064, 5.67142963, 1.79642916, 5.01428461, 3.65357184, 1.84285641, 5.51071453, 1.04999924, 5.97500038, 0.5, 7.625, 2.35714293, 3.1964283, 4.21428585, 0.33928588, 6.07142925, 2.19642901, 4.7857132, 4.0535717, 0.357142448, 5.91071463, -0.75, 6.375},
     {-3.5, 3.625, 0.833333492, 4.29166603, 5.16666698, 1.29166698, -0.5, 6.625, 3.83333349, -0.0416665077, 4.5, 4.29166698}},
    {{-3.5, 3.625, -1.875, 5.25, -0.25, 6.875, 1.375, 3, 3, -0.875, 4.625, 0.75, 6.25, 2.375, -2.5, 4.625, -0.875, 3.5, 0.75, 2.375, 2.375, 1.25, 4, 0.125, 5.625, 1.75, 7.25, 3.375, -1.5, 5.625, 0.125, 1.75, 1.75, -2.125, 3.375, -0.5, 5, 1.125, 6.625, 2.75, 8.25, 4.375, -0.5, 6.625, 1.125, 2.75, 2.75, -1.125, 4.375, 0.5, 6, 2.125, 4.875, 3.75, 3.75, 5.375, 0.5, 7.625, 2.125, 3.75, 3.75, -0.125, 5.375, 1.5, 7, 3.125, 3.125, 4.75, -0.75, 6.375},
     {-3.5, 3.625, 1.375, 3, 6.25, 2.375, 0.5, 7.625, 5.375, 1.5, -0.75, 6.375}},
    {{-3.5, 3.625, -2.33928537, 4.78571463, -0.482142687, 6.64285755, 1.375, 3, 3.2321434, -0.642856479, 5.08928633, 1.21428633, 6.25, 2.375, -2.69999981, 4.42500019, -1.53928542, 4.01428556, 0.317857385, 3.35714245, 2.17500019, 1.5999999, 4.03214359, 0.157143593, 5.88928652, 2.01428652, 7.05000019, 3.17500019, -1.5, 5.625, -0.339285493, 2.85714245, 1.51785731, -1.57142878, 3.375, -0.5, 5.2321434, 1.35714352, 7.08928633, 3.21428633, 8.25, 4.375, -0.299999714, 6.82500029, 0.860714793, 4.05714273, 2.7178576, -0.37142849, 4.57500029, 0.700000286, 5.96071386, 2.55714369, 4.04642725, 4.41428661, 2.84999847, 5.57500029, 0.5, 7.625, 1.66071451, 4.85714245, 3.51785731, 0.428571224, 5.375, 1.5, 6.44642687, 3.3571434, 2.01785564, 5.21428633, -0.75, 6.375},
     {-2.45833325, 4.20833349, 1.875, 2.125, 6.20833397, 2.33333397, 0.541666746, 5.83333302, 4.875, 1, 2.33333254, 5.33333397}},
};
static const double NN_W[3][2][70] = {
    {{-3.5, 3.625, -3.5, 3.625, -0.25, 6.875, -0.25, 6.875, 3, -0.875, 3, -0.875, 6.25, 2.375, -3.5, 3.625, -3.5, 3.625, -0.25, 6.875, -0.25, 6.875, 3, -0.875, 3, -0.875, 6.25, 2.375, -1.5, 5.625, -1.5, 5.625, 1.75, -2.125, 1.75, -2.125, 5, 1.125, 5, 1.125, 8.25, 4.375, -1.5, 5.625, -1.5, 5.625, 1.75, -2.125, 1.75, -2.125, 5, 1.125, 5, 1.125, 8.25, 4.375, 0.5, 7.625, 0.5, 7.625, 3.75, -0.125, 3.75, -0.125, 7, 3.125, 7, 3.125, -0.75, 6.375},
     {-3.5, 3.625, -0.25, 6.875, 3, -0.875, -1.5, 5.625, 1.75, -2.125, 5, 1.125}},
    {{-3.5, 3.625, -0.25, 6.875, -0.25, 6.875, 3, -0.875, 3, -0.875, 6.25, 2.375, 6.25, 2.375, -1.5, 5.625, 1.75, -2.125, 1.75, -2.125, 5, 1.125, 5, 1.125, 8.25, 4.375, 8.25, 4.375, -1.5, 5.625, 1.75, -2.125, 1.75, -2.125, 5, 1.125, 5, 1.125, 8.25, 4.375, 8.25, 4.375, 0.5, 7.625, 3.75, -0.125, 3.75, -0.125, 7, 3.125, 7, 3.125, -0.75, 6.375, -0.75, 6.375, 0.5, 7.625, 3.75, -0.125, 3.75, -0.125, 7, 3.125, 7, 3.125, -0.75, 6.375, -0.75, 6.375},
     {-3.5, 3.625, 3, -0.875, 6.25, 2.375, 0.5, 7.625, 7, 3.125, -0.75, 6.375}},
    {{-3.5, 3.625, -3.5, 3.625, -0.25, 6.875, 3, -0.875, 3, -0.875, 6.25, 2.375, 6.25, 2.375, -3.5, 3.625, -3.5, 3.625, -0.25, 6.875, 3, -0.875, 3, -0.875, 6.25, 2.375, 6.25, 2.375, -1.5, 5.625, -1.5, 5.625, 1.75, -2.125, 5, 1.125, 5, 1.125, 8.25, 4.375, 8.25, 4.375, 0.5, 7.625, 0.5, 7.625, 3.75, -0.125, 7, 3.125, 7, 3.125, -0.75, 6.375, -0.75, 6.375, 0.5, 7.625, 0.5, 7.625, 3.75, -0.125, 7, 3.125, 7, 3.125, -0.75, 6.375, -0.75, 6.375},
     {-3.5, 3.625, 3, -0.875, 6.25, 2.375, 0.5, 7.625, 7, 3.125, -0.75, 6.375}},
};
/* ResizeBilinearGrad / ResizeNearestNeighborGrad of DY [1,5,7,2] and [1,2,3,2] onto [1,3,4,2] */
static const double BLG_W[4][2][24] = {
    {{-1.50800002, 1.41199994, 2.38399982, 0.00800015032, 1.46399999, -0.21200031, 1.09000015, 2.32000017, -1.25485706, 2.08228564, 3.28685665, 0.571428657, 2.23542833, 0.319999546, 1.94857144, 3.35428619, -0.908571601, 3.2628572, 4.90057135, 1.50628579, 3.58628583, 1.19199944, 3.42571449, 5.18285799},
     {-1.25, 1.25999999, 0.179999992, -0.479999989, 0.686666548, 0.0266665816, 1.19333351, 0.533333421, -0.0949999988, -0.589999974, 0.443333328, 0.11333333, 0.113333389, 0.366666615, -0.216666684, 0.620000064, -0.0949999988, -0.589999974, 0.443333328, 0.11333333, 0.113333389, 0.366666615, -0.216666684, 0.620000064}},
    {{-1.56750011, 1.45499992, 2.88499975, -0.0849999487, 1.50500011, 1.16000009, 0.922500014, 1.31999993, -1.38999999, 2.63999987, 4.77999973, 0.820000112, 2.94000006, 2.48000002, 1.92999995, 2.46000004, -0.517500043, 2.50500011, 4.28499985, 1.31500006, 2.90499973, 2.55999994, 1.97249985, 2.37000012},
     {-1.25, 1.25999999, 0.135000005, -0.360000014, 0.135000005, -0.360000014, 1.78999996, 0.800000012, 0, 0, 0, 0, 0, 0, 0, 0, -0.189999998, -1.17999995, 0.665000021, 0.170000002, 0.665000021, 0.170000002, -0.649999976, 1.86000001}},
    {{-1.37371457, 1.51085711, 2.81171441, -0.0168570876, 1.60257125, 0.773999333, 1.01942885, 1.90400064, -0.843428731, 2.40171409, 3.89442873, 0.712285638, 2.53414202, 1.60199904, 1.84885752, 2.84400105, -0.125714511, 2.75885725, 4.11171436, 1.28314292, 2.90257144, 2.07399917, 2.26742911, 3.15200138},
     {-0.78125, 0.787499964, -0.0550000072, -0.112499997, 0.324999809, -0.170000106, 1.11875021, 0.500000119, -0.299999982, 0.0166666657, 0.140000001, -0.044166673, 0.247499973, 0.0633332282, 0.237500042, 0.554166794, -0.118749999, -0.737499952, 0.475000024, -0.0200000256, 0.417500108, 0.359999776, -0.40625006, 1.16250026}},
    {{0},
     {0}},
};
static const double NNG_W[4][2][24] = {
    {{-1.68000019, 1.3599999, 3.47999978, -0.4799999, 1.6400001, 4.68000031, 1.88, -0.099999994, -0.560000002, 2.47999978, 4.5999999, 0.640000105, 2.75999999, 5.80000019, 2.44000006, 0.460000008, 0.139999986, 1.66000009, 2.71999979, 0.74000001, 1.79999995, 3.32000017, 1.42999995, 0.439999998},
     {-1.25, 1.25999999, 0.270000011, -0.720000029, 1.78999996, 0.800000012, 0, 0, -0.189999998, -1.17999995, 1.33000004, 0.340000004, -0.649999976, 1.86000001, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {{-1.25, 1.25999999, 2.05999994, 0.0799999833, 1.1400001, -0.839999914, 0.220000029, 1.74000001, -2.07999992, 2.94000006, 4.96000004, 1, 3.12000012, -0.839999914, 1.27999997, 4.31999969, -1.51999998, 3.5, 6.07999992, 2.11999989, 4.23999977, 0.279999971, 2.39999986, 5.44000006},
     {-1.25, 1.25999999, 0, 0, 0.270000011, -0.720000029, 1.78999996, 0.800000012, 0, 0, 0, 0, 0, 0, 0, 0, -0.189999998, -1.17999995, 0, 0, 1.33000004, 0.340000004, -0.649999976, 1.86000001}},
    {{-1.68000019, 1.3599999, 3.71999979, 1.74000001, 2.56000018, -1.39999986, 0.720000029, 3.75999999, -0.420000017, 1.0999999, 2.06999993, 1.08000004, 1.70000005, -0.279999971, 0.779999971, 2.30000019, 0, 3.03999972, 4.55999994, 2.57999992, 4.23999977, 0.279999971, 2.39999986, 5.44000006},
     {-1.25, 1.25999999, 0, 0, 0.270000011, -0.720000029, 1.78999996, 0.800000012, 0, 0, 0, 0, 0, 0, 0, 0, -0.189999998, -1.17999995, 0, 0, 1.33000004, 0.340000004, -0.649999976, 1.86000001}},
    {{-1.25, 1.25999999, 2.05999994, 0.0799999833, 1.1400001, -0.839999914, 0.220000029, 1.74000001, -2.07999992, 2.94000006, 4.96000004, 1, 3.12000012, -0.839999914, 1.27999997, 4.31999969, -1.51999998, 3.5, 6.07999992, 2.11999989, 4.23999977, 0.279999971, 2.39999986, 5.44000006},
     {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1.25, 1.25999999, 0.270000011, -0.720000029, 1.78999996, 0.800000012, 0, 0, -0.189999998, -1.17999995, 1.33000004, 0.340000004, -0.649999976, 1.86000001}},
};
/* uint8 image (i*23 %% 256) bilinear to [5,7], half pixel centers */
static const double BL_U8[] = {0, 23, 16.4285736, 39.4285736, 42.7142868, 65.7142868, 69, 92, 95.2857208, 118.285721, 121.571434, 144.571442, 138, 161, 73.6000061, 96.6000061, 90.0285797, 113.02858, 116.314293, 139.314301, 91.4000015, 114.400002, 66.4857178, 89.4857178, 92.771431, 115.771439, 109.199997, 132.199997, 184, 207, 200.428574, 223.428574, 226.714294, 249.714294, 125, 148, 23.2857246, 46.2857246, 49.571434, 72.571434, 66, 89, 140.799988, 163.799988, 157.228561, 180.228561, 183.514282, 206.514282, 158.600006, 181.600006, 133.685745, 145.714294, 159.971466, 84.2285614, 176.400024, 45.7999878, 112, 135, 128.428574, 151.428574, 154.714294, 177.714294, 181, 204, 207.285721, 211.999954, 233.571442, 91.9999695, 250, 17};
static const double NN_F16[] = {-3.5, 3.625, -3.5, 3.625, -0.25, 6.875, 3, -0.875, 3, -0.875, 6.25, 2.375, 6.25, 2.375, -3.5, 3.625, -3.5, 3.625, -0.25, 6.875, 3, -0.875, 3, -0.875, 6.25, 2.375, 6.25, 2.375, -1.5, 5.625, -1.5, 5.625, 1.75, -2.125, 5, 1.125, 5, 1.125, 8.25, 4.375, 8.25, 4.375, 0.5, 7.625, 0.5, 7.625, 3.75, -0.125, 7, 3.125, 7, 3.125, -0.75, 6.375, -0.75, 6.375, 0.5, 7.625, 0.5, 7.625, 3.75, -0.125, 7, 3.125, 7, 3.125, -0.75, 6.375, -0.75, 6.375};
static const double BL_F16[] = {-3.5, 3.625, 1.375, 3, 6.25, 2.375, 0.5, 7.625, 5.375, 1.5, -0.75, 6.375};
static const double NNG_I32[] = {-2, 2, -4, -2, 4, -1, 2, -3, -4, -2, 1, 2, -1, 1, -2, 0, 4, -1, -1, 1, 1, -4, -1, 3};
static const double BLG_F64[] = {-1.37371441, 1.51085707, 2.81171441, -0.0168571025, 1.60257114, 0.773999363, 1.01942888, 1.90400058, -0.843428761, 2.40171404, 3.8944285, 0.712285686, 2.53414217, 1.60199904, 1.84885745, 2.84400069, -0.125714574, 2.75885736, 4.11171463, 1.28314301, 2.90257101, 2.07399919, 2.26742929, 3.15200127};
static const double BLG_F16[] = {-1.37402344, 1.51074219, 2.8125, -0.0168609619, 1.60253906, 0.773925781, 1.01953125, 1.90429688, -0.843261719, 2.40234375, 3.89453125, 0.712402344, 2.53320312, 1.6015625, 1.84863281, 2.84375, -0.125732422, 2.75976562, 4.11328125, 1.28320312, 2.90234375, 2.07421875, 2.26757812, 3.15234375};
static const double BIG_BI_01 = 649.25208630901761;
static const double BIG_NE_01 = 2229.8000483438373;
static const double BIG_BI_10 = 1074.2501564100385;
static const double BIG_BLG = 575.94560761470348;
static const double BIG_NNG = 448.1999945640564;
/* Edge sizes of X: [1,1] align_corners, [1,1] half pixel, [1,5] align_corners, [4,1] half pixel,
   [1,1] neither; int64 values near 2^60 (an int64 image) resized to its own size */
static const double BL_EDGE[5][10] = {{-3.5, 3.625},
    {3.375, -0.5},
    {-3.5, 3.625, -1.0625, 6.0625, 1.375, 3, 3.8125, -0.0625, 6.25, 2.375},
    {1.375, 3, 2.625, 0.8125, 4.125, 0.25, 5.375, 1.5},
    {-3.5, 3.625}};
static const double NN_EDGE[5][10] = {{-3.5, 3.625},
    {5, 1.125},
    {-3.5, 3.625, -0.25, 6.875, 3, -0.875, 3, -0.875, 6.25, 2.375},
    {3, -0.875, 5, 1.125, 5, 1.125, 7, 3.125},
    {-3.5, 3.625}};
static const double BL_I64_SAME[24] = {1.1529215e+18, 1.15292247e+18, 1.15292343e+18, 1.15292439e+18, 1.15292535e+18, 1.15292645e+18, 1.15292741e+18, 1.15292838e+18, 1.15292934e+18, 1.1529303e+18, 1.15293126e+18, 1.15293222e+18, 1.15293319e+18, 1.15293415e+18, 1.15293525e+18, 1.15293621e+18, 1.15293717e+18, 1.15293813e+18, 1.1529391e+18, 1.15294006e+18, 1.15294102e+18, 1.15294198e+18, 1.15294295e+18, 1.15294391e+18};
/* 10 channels (blocks of 8 and a tail): X = BIG on [1,9,11,10], DY = BIG on [1,13,7,10]; bilinear
   (0,1), (1,0); bilinear grad (0,1), (0,0); nearest grad (0,1), (1,0); bilinear (0,1) down to [4,5] */
static const double CHAN10[7] = {131.67650496214628, 366.29978038370609, -230.96494369208813, -736.73302504234016, 268.40000633895397, 268.40000633895397,
                                    -66.847511179745197};

static const int COMBO[4][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};   /* align_corners, half_pixel_centers */
static const int64_t SIZES[2][2] = {{5, 7}, {2, 3}};

static double xval(int64_t i) { return (double)((i * 7) % 11) - 3.5 + 0.125 * (double)i; }
static double dyval(int64_t i) { return (double)((i * 5) % 7) * 0.5 - 1.25 + 0.01 * (double)i; }
static double bigval(int64_t i) { return (double)((i * 13) % 101) * 0.1 - 5; }

static df_tensor *tensor_of(df_dtype t, int rank, const int64_t *dims, double (*f)(int64_t)) {
    df_tensor *x = df_tensor_new(t, rank, dims, NULL);
    if (!x) return NULL;
    for (int64_t i = 0; i < df_tensor_num_elements(x); i++) {
        double v = f(i);
        void *p = df_tensor_data(x);
        switch (t) {
        case DF_FLOAT: ((float *)p)[i] = (float)v; break;
        case DF_DOUBLE: ((double *)p)[i] = v; break;
        case DF_HALF: ((uint16_t *)p)[i] = df_float_to_half((float)v); break;
        case DF_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
        case DF_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
        default: break;
        }
    }
    return x;
}
static df_output konst_f(df_graph *g, df_dtype t, int rank, const int64_t *dims, double (*f)(int64_t)) {
    df_tensor *x = tensor_of(t, rank, dims, f);
    df_output o = df_const(g, x);
    df_tensor_release(x);
    return o;
}
static df_output size_const(df_graph *g, int n, const int64_t *v) {
    int64_t d = n;
    df_tensor *t = df_tensor_new(DF_INT32, 1, &d, NULL);
    for (int i = 0; i < n; i++) ((int32_t *)df_tensor_data(t))[i] = (int32_t)v[i];
    df_output o = df_const(g, t);
    df_tensor_release(t);
    return o;
}
static df_output resize(df_graph *g, const char *op, const char *name, df_output a, df_output b, int align, int hpc) {
    df_op_builder *bd = df_op_new(g, op, name);
    df_op_add_input(bd, a);
    df_op_add_input(bd, b);
    df_op_set_attr_bool(bd, "align_corners", align);
    df_op_set_attr_bool(bd, "half_pixel_centers", hpc);
    df_output o = {df_op_finish(bd), 0};
    return o;
}
static df_code run_opts(df_graph *g, int threads, int n_feeds, const df_output *feeds, df_tensor *const *fv, const df_output *fetches,
                        int n, df_tensor **out, df_status *st) {
    for (int i = 0; i < n; i++) out[i] = NULL;
    df_session_options o;
    memset(&o, 0, sizeof o);
    o.intra_op_threads = threads;
    df_session *s = df_session_new(g, &o, st);
    if (!s) return st->code;
    df_session_run(s, feeds, fv, n_feeds, fetches, out, n, NULL, 0, st);
    df_session_free(s);
    return st->code;
}
static df_code run(df_graph *g, const df_output *fetches, int n, df_tensor **out, df_status *st) {
    return run_opts(g, 1, 0, NULL, NULL, fetches, n, out, st);
}
static double elem(const df_tensor *t, int64_t i) {
    const void *p = df_tensor_data(t);
    switch (df_tensor_dtype(t)) {
    case DF_DOUBLE: return ((const double *)p)[i];
    case DF_FLOAT: return ((const float *)p)[i];
    case DF_HALF: return df_half_to_float(((const uint16_t *)p)[i]);
    case DF_INT32: return ((const int32_t *)p)[i];
    case DF_UINT8: return ((const uint8_t *)p)[i];
    default: return NAN;
    }
}
static void check_values(const char *what, const df_tensor *t, df_dtype dt, const int64_t *dims, const double *want, double rel) {
    CHECK_MSG(t != NULL, "%s: no value", what);
    if (!t) return;
    CHECK_MSG(df_tensor_dtype(t) == dt, "%s: dtype %s", what, df_dtype_name(df_tensor_dtype(t)));
    int ok = df_tensor_rank(t) == 4;
    for (int d = 0; ok && d < 4; d++) ok = df_tensor_dim(t, d) == dims[d];
    CHECK_MSG(ok, "%s: shape differs (rank %d)", what, df_tensor_rank(t));
    if (!ok) return;
    for (int64_t i = 0; i < df_tensor_num_elements(t); i++) {
        double got = elem(t, i);
        CHECK_MSG(fabs(got - want[i]) <= rel * fabs(want[i]) + 1e-7, "%s[%lld]: %.9g, TensorFlow %.9g", what, (long long)i, got, want[i]);
    }
}

DF_TEST(resize_forward_matches_tensorflow) {
    for (int op = 0; op < 2; op++)
        for (int k = 0; k < 3; k++)
            for (int s = 0; s < 2; s++) {
                df_graph *g = df_graph_new();
                df_output x = konst_f(g, DF_FLOAT, 4, D(1, 3, 4, 2), xval);
                df_output y = resize(g, op ? "ResizeNearestNeighbor" : "ResizeBilinear", NULL, x, size_const(g, 2, SIZES[s]),
                                     COMBO[k][0], COMBO[k][1]);
                int64_t sd[DF_MAX_RANK];
                CHECK_EQ_INT(df_output_shape(y, sd), 4);
                CHECK(sd[0] == 1 && sd[1] == SIZES[s][0] && sd[2] == SIZES[s][1] && sd[3] == 2);
                df_tensor *out = NULL;
                df_status st;
                CHECK_OK((run(g, &y, 1, &out, &st), &st));
                char what[96];
                snprintf(what, sizeof what, "%s align %d hpc %d size %d", op ? "nearest" : "bilinear", COMBO[k][0], COMBO[k][1], s);
                check_values(what, out, DF_FLOAT, D(1, SIZES[s][0], SIZES[s][1], 2), op ? NN_W[k][s] : BL_W[k][s], 1e-6);
                df_tensor_release(out);
                df_graph_free(g);
            }
}
DF_TEST(resize_edge_sizes_match_tensorflow) {
    static const int64_t sz[5][2] = {{1, 1}, {1, 1}, {1, 5}, {4, 1}, {1, 1}};
    static const int at[5][2] = {{1, 0}, {0, 1}, {1, 0}, {0, 1}, {0, 0}};
    for (int op = 0; op < 2; op++)
        for (int k = 0; k < 5; k++) {
            df_graph *g = df_graph_new();
            df_output x = konst_f(g, DF_FLOAT, 4, D(1, 3, 4, 2), xval);
            df_output y = resize(g, op ? "ResizeNearestNeighbor" : "ResizeBilinear", NULL, x, size_const(g, 2, sz[k]), at[k][0], at[k][1]);
            df_tensor *out = NULL;
            df_status st;
            CHECK_OK((run(g, &y, 1, &out, &st), &st));
            char what[64];
            snprintf(what, sizeof what, "%s edge case %d", op ? "nearest" : "bilinear", k);
            check_values(what, out, DF_FLOAT, D(1, sz[k][0], sz[k][1], 2), op ? NN_EDGE[k] : BL_EDGE[k], 1e-6);
            df_tensor_release(out);
            df_graph_free(g);
        }
    /* the same size: the image as float, int64 straight to float */
    df_graph *g = df_graph_new();
    df_tensor *t = df_tensor_new(DF_INT64, 4, D(1, 3, 4, 2), NULL);
    for (int64_t i = 0; i < 24; i++) ((int64_t *)df_tensor_data(t))[i] = i * 1000000007 * 977 + ((int64_t)1 << 60);
    df_output y = resize(g, "ResizeBilinear", NULL, df_const(g, t), size_const(g, 2, D(3, 4)), 0, 0);
    df_tensor_release(t);
    df_tensor *out = NULL;
    df_status st;
    CHECK_OK((run(g, &y, 1, &out, &st), &st));
    CHECK(out && df_tensor_dtype(out) == DF_FLOAT && df_tensor_num_elements(out) == 24);
    for (int i = 0; out && i < 24; i++)
        CHECK_MSG(((const float *)df_tensor_data(out))[i] == (float)BL_I64_SAME[i], "int64 same size [%d]: %.9g, TensorFlow %.9g", i,
                  ((const float *)df_tensor_data(out))[i], BL_I64_SAME[i]);
    df_tensor_release(out);
    df_graph_free(g);
}
DF_TEST(resize_grad_ops_match_tensorflow) {
    for (int op = 0; op < 2; op++)
        for (int k = 0; k < 4; k++)
            for (int s = 0; s < 2; s++) {
                df_graph *g = df_graph_new();
                df_output x = konst_f(g, DF_FLOAT, 4, D(1, 3, 4, 2), xval);
                df_output dy = konst_f(g, DF_FLOAT, 4, D(1, SIZES[s][0], SIZES[s][1], 2), dyval);
                df_output y = op ? resize(g, "ResizeNearestNeighborGrad", "rg", dy, size_const(g, 2, D(3, 4)), COMBO[k][0], COMBO[k][1])
                                 : resize(g, "ResizeBilinearGrad", "rg", dy, x, COMBO[k][0], COMBO[k][1]);
                df_tensor *out = NULL;
                df_status st;
                run(g, &y, 1, &out, &st);
                if (!op && k == 3) {      /* TensorFlow refuses both for the bilinear gradient only */
                    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "If half_pixel_centers is True, align_corners must be False. {{node rg}}");
                } else {
                    CHECK_OK(&st);
                    char what[96];
                    snprintf(what, sizeof what, "%s grad align %d hpc %d size %d", op ? "nearest" : "bilinear", COMBO[k][0], COMBO[k][1], s);
                    check_values(what, out, DF_FLOAT, D(1, 3, 4, 2), op ? NNG_W[k][s] : BLG_W[k][s], 1e-6);
                }
                df_tensor_release(out);
                df_graph_free(g);
            }
}
static double u8val(int64_t i) { return (double)((i * 23) % 256); }
static double ival(int64_t i) { return (double)(i % 9 - 4); }
DF_TEST(resize_dtypes_match_tensorflow) {
    df_graph *g = df_graph_new();
    df_output xh = konst_f(g, DF_HALF, 4, D(1, 3, 4, 2), xval);
    df_output ys[6] = {
        resize(g, "ResizeBilinear", NULL, konst_f(g, DF_UINT8, 4, D(1, 3, 4, 2), u8val), size_const(g, 2, D(5, 7)), 0, 1),
        resize(g, "ResizeNearestNeighbor", NULL, xh, size_const(g, 2, D(5, 7)), 0, 1),
        resize(g, "ResizeBilinear", NULL, xh, size_const(g, 2, D(2, 3)), 1, 0),
        resize(g, "ResizeNearestNeighborGrad", NULL, konst_f(g, DF_INT32, 4, D(1, 5, 7, 2), ival), size_const(g, 2, D(3, 4)), 0, 1),
        resize(g, "ResizeBilinearGrad", NULL, konst_f(g, DF_FLOAT, 4, D(1, 5, 7, 2), dyval), konst_f(g, DF_DOUBLE, 4, D(1, 3, 4, 2), xval), 0, 1),
        resize(g, "ResizeBilinearGrad", NULL, konst_f(g, DF_FLOAT, 4, D(1, 5, 7, 2), dyval), xh, 0, 1),
    };
    df_tensor *out[6];
    df_status st;
    CHECK_OK((run(g, ys, 6, out, &st), &st));
    check_values("uint8 bilinear", out[0], DF_FLOAT, D(1, 5, 7, 2), BL_U8, 1e-6);
    check_values("half nearest", out[1], DF_HALF, D(1, 5, 7, 2), NN_F16, 0);
    check_values("half bilinear", out[2], DF_FLOAT, D(1, 2, 3, 2), BL_F16, 1e-6);
    check_values("int32 nearest grad", out[3], DF_INT32, D(1, 3, 4, 2), NNG_I32, 0);
    check_values("double bilinear grad", out[4], DF_DOUBLE, D(1, 3, 4, 2), BLG_F64, 1e-9);
    check_values("half bilinear grad", out[5], DF_HALF, D(1, 3, 4, 2), BLG_F16, 0);
    for (int i = 0; i < 6; i++) df_tensor_release(out[i]);
    df_graph_free(g);
}
/* sum(out[i] * ((i mod 17) - 8)), as the TensorFlow sums were taken */
static double wsum(const df_tensor *t) {
    double s = 0;
    for (int64_t i = 0; t && i < df_tensor_num_elements(t); i++) s += elem(t, i) * (double)(i % 17 - 8);
    return s;
}
DF_TEST(resize_large_images_split_between_threads_match_tensorflow) {
    df_graph *g = df_graph_new();
    df_output x = konst_f(g, DF_FLOAT, 4, D(2, 37, 53, 3), bigval);
    df_output dy = konst_f(g, DF_FLOAT, 4, D(2, 97, 41, 3), bigval);
    df_output sz = size_const(g, 2, D(97, 41));
    df_output ys[5] = {
        resize(g, "ResizeBilinear", NULL, x, sz, 0, 1), resize(g, "ResizeNearestNeighbor", NULL, x, sz, 0, 1),
        resize(g, "ResizeBilinear", NULL, x, sz, 1, 0), resize(g, "ResizeBilinearGrad", NULL, dy, x, 0, 1),
        resize(g, "ResizeNearestNeighborGrad", NULL, dy, size_const(g, 2, D(37, 53)), 0, 1),
    };
    const double want[5] = {BIG_BI_01, BIG_NE_01, BIG_BI_10, BIG_BLG, BIG_NNG};
    df_tensor *one[5], *four[5];
    df_status st;
    CHECK_OK((run_opts(g, 1, 0, NULL, NULL, ys, 5, one, &st), &st));
    CHECK_OK((run_opts(g, 4, 0, NULL, NULL, ys, 5, four, &st), &st));
    for (int i = 0; i < 5; i++) {
        CHECK_MSG(one[i] && four[i] && df_tensor_nbytes(one[i]) == df_tensor_nbytes(four[i]) &&
                  !memcmp(df_tensor_data(one[i]), df_tensor_data(four[i]), df_tensor_nbytes(one[i])), "output %d: threads differ", i);
        CHECK_MSG(fabs(wsum(four[i]) - want[i]) <= 1e-6 * fabs(want[i]), "output %d: %.17g, TensorFlow %.17g", i, wsum(four[i]), want[i]);
        df_tensor_release(one[i]);
        df_tensor_release(four[i]);
    }
    df_graph_free(g);
}

DF_TEST(resize_many_channels_match_tensorflow) {
    df_graph *g = df_graph_new();
    df_output x = konst_f(g, DF_FLOAT, 4, D(1, 9, 11, 10), bigval);
    df_output dy = konst_f(g, DF_FLOAT, 4, D(1, 13, 7, 10), bigval);
    df_output sz = size_const(g, 2, D(13, 7)), osz = size_const(g, 2, D(9, 11));
    df_output ys[7] = {
        resize(g, "ResizeBilinear", NULL, x, sz, 0, 1), resize(g, "ResizeBilinear", NULL, x, sz, 1, 0),
        resize(g, "ResizeBilinearGrad", NULL, dy, x, 0, 1), resize(g, "ResizeBilinearGrad", NULL, dy, x, 0, 0),
        resize(g, "ResizeNearestNeighborGrad", NULL, dy, osz, 0, 1), resize(g, "ResizeNearestNeighborGrad", NULL, dy, osz, 1, 0),
        resize(g, "ResizeBilinear", NULL, x, size_const(g, 2, D(4, 5)), 0, 1),
    };
    df_tensor *out[7];
    df_status st;
    CHECK_OK((run(g, ys, 7, out, &st), &st));
    for (int i = 0; i < 7; i++) {
        CHECK_MSG(fabs(wsum(out[i]) - CHAN10[i]) <= 1e-6 * fabs(CHAN10[i]), "output %d: %.17g, TensorFlow %.17g", i, wsum(out[i]), CHAN10[i]);
        df_tensor_release(out[i]);
    }
    df_graph_free(g);
}

/* ---- gradients against central differences in float64 ---- */
static double W(int64_t i) { return 1.0 + 0.25 * (double)(i % 5); }
/* sum(W * resize(x)) (as double) for x of [1,3,4,2] in v */
static double loss_at(const char *op, const int64_t *size, int align, int hpc, const double *v) {
    df_graph *g = df_graph_new();
    df_tensor *xt = df_tensor_new(DF_DOUBLE, 4, D(1, 3, 4, 2), NULL);
    memcpy(df_tensor_data(xt), v, 24 * sizeof(double));
    df_output x = df_const(g, xt);
    df_tensor_release(xt);
    df_output y = resize(g, op, NULL, x, size_const(g, 2, size), align, hpc);
    df_tensor *out = NULL;
    df_status st;
    double s = NAN;
    if (run(g, &y, 1, &out, &st) == DF_OK && out) {
        s = 0;
        for (int64_t i = 0; i < df_tensor_num_elements(out); i++) s += elem(out, i) * W(i);
    }
    df_tensor_release(out);
    df_graph_free(g);
    return s;
}
/* The image as a placeholder of unknown height and width when dynamic (the nearest gradient's
   size then comes from the image's run-time shape). */
static void check_grad(const char *op, const int64_t *size, int align, int hpc, int dynamic) {
    double v[24];
    for (int i = 0; i < 24; i++) v[i] = xval(i) * 0.37;
    df_graph *g = df_graph_new();
    df_tensor *xt = df_tensor_new(DF_DOUBLE, 4, D(1, 3, 4, 2), NULL);
    memcpy(df_tensor_data(xt), v, sizeof v);
    df_output x = dynamic ? df_placeholder(g, "x", DF_DOUBLE, 4, D(1, -1, -1, 2)) : df_const(g, xt);
    df_output y = resize(g, op, NULL, x, size_const(g, 2, size), align, hpc);
    int64_t yd[4] = {1, size[0], size[1], 2};
    df_tensor *wt = df_tensor_new(df_output_dtype(y), 4, yd, NULL);
    for (int64_t i = 0; i < df_tensor_num_elements(wt); i++) {
        if (df_output_dtype(y) == DF_FLOAT) ((float *)df_tensor_data(wt))[i] = (float)W(i);
        else ((double *)df_tensor_data(wt))[i] = W(i);
    }
    df_output wy = df_const(g, wt);
    df_tensor_release(wt);
    df_output dx;
    CHECK_MSG(df_gradients(g, 1, &y, &wy, 1, &x, &dx) == DF_OK, "%s: %s", op, df_graph_status(g)->message);
    df_tensor *out = NULL;
    df_status st;
    run_opts(g, 1, dynamic, &x, &xt, &dx, 1, &out, &st);
    CHECK_MSG(st.code == DF_OK, "%s gradient: %s", op, st.message);
    df_tensor_release(xt);
    CHECK(out && df_tensor_dtype(out) == DF_DOUBLE && df_tensor_num_elements(out) == 24);
    /* ResizeBilinear computes in float: it is linear, so wide steps lose nothing but float rounding */
    int bl = !strcmp(op, "ResizeBilinear");
    for (int e = 0; out && e < 24; e++) {
        double keep = v[e], h = bl ? 0.5 : 1e-6 * (1 + fabs(keep));
        v[e] = keep + h;
        double lp = loss_at(op, size, align, hpc, v);
        v[e] = keep - h;
        double lm = loss_at(op, size, align, hpc, v);
        v[e] = keep;
        double num = (lp - lm) / (2 * h), got = elem(out, e);
        CHECK_MSG(fabs(got - num) <= (bl ? 1e-5 : 1e-7) * (1 + fabs(num)), "%s align %d hpc %d size %lldx%lld%s: [%d] %.12g, numeric %.12g",
                  op, align, hpc, (long long)size[0], (long long)size[1], dynamic ? " dynamic" : "", e, got, num);
    }
    df_tensor_release(out);
    df_graph_free(g);
}
DF_TEST(resize_gradients_match_central_differences) {
    for (int op = 0; op < 2; op++)
        for (int k = 0; k < 3; k++)
            for (int s = 0; s < 2; s++) check_grad(op ? "ResizeNearestNeighbor" : "ResizeBilinear", SIZES[s], COMBO[k][0], COMBO[k][1], 0);
    check_grad("ResizeNearestNeighbor", SIZES[0], 0, 1, 1);
    check_grad("ResizeBilinear", SIZES[1], 0, 1, 1);
}
DF_TEST(resize_gradient_registrations_follow_tensorflow) {
    df_graph *g = df_graph_new();
    /* integer images: no gradient (the gradient op has no integer kernel) */
    df_output xi = konst_f(g, DF_INT32, 4, D(1, 3, 4, 2), ival);
    df_output y = resize(g, "ResizeBilinear", NULL, xi, size_const(g, 2, D(5, 7)), 0, 1), dx;
    CHECK_EQ_INT(df_gradients(g, 1, &y, NULL, 1, &xi, &dx), DF_OK);
    CHECK(dx.node == NULL);
    /* ResizeBilinearGrad is not differentiable (none); ResizeNearestNeighborGrad has no gradient */
    df_output x = konst_f(g, DF_FLOAT, 4, D(1, 3, 4, 2), xval), dy = konst_f(g, DF_FLOAT, 4, D(1, 5, 7, 2), dyval);
    y = resize(g, "ResizeBilinearGrad", NULL, dy, x, 0, 1);
    CHECK_EQ_INT(df_gradients(g, 1, &y, NULL, 1, &dy, &dx), DF_OK);
    CHECK(dx.node == NULL);
    y = resize(g, "ResizeNearestNeighborGrad", "nng", dy, size_const(g, 2, D(3, 4)), 0, 1);
    CHECK_EQ_INT(df_gradients(g, 1, &y, NULL, 1, &dy, &dx), DF_UNIMPLEMENTED);
    CHECK_MSG(strstr(df_graph_status(g)->message, "(op type: ResizeNearestNeighborGrad)") != NULL, "%s", df_graph_status(g)->message);
    df_graph_free(g);
}

/* ---- bad inputs ---- */
/* Runs op "rs" on an image fed through a shapeless placeholder and a fed size. */
static void check_bad(const char *op, df_tensor *img, df_tensor *size, int align, int hpc, const char *needle) {
    df_graph *g = df_graph_new();
    df_output in[2] = {df_placeholder(g, "img", df_tensor_dtype(img), -1, NULL), df_placeholder(g, "size", DF_INT32, -1, NULL)};
    df_output y = resize(g, op, "rs", in[0], in[1], align, hpc);
    CHECK_MSG(df_graph_status(g)->code == DF_OK, "%s", df_graph_status(g)->message);
    df_tensor *fv[2] = {img, size}, *out = NULL;
    df_status st;
    run_opts(g, 1, 2, in, fv, &y, 1, &out, &st);
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, needle);
    CHECK_MSG(strstr(st.message, "{{node rs}}") != NULL, "%s", st.message);
    df_tensor_release(out);
    df_tensor_release(img);
    df_tensor_release(size);
    df_graph_free(g);
}
static df_tensor *ints(int rank, const int64_t *dims, const int32_t *v) {
    df_tensor *t = df_tensor_new(DF_INT32, rank, dims, NULL);
    for (int64_t i = 0; i < df_tensor_num_elements(t); i++) ((int32_t *)df_tensor_data(t))[i] = v[i];
    return t;
}
static df_tensor *img(int64_t b, int64_t h, int64_t w, int64_t c) { return tensor_of(DF_FLOAT, 4, D(b, h, w, c), xval); }
DF_TEST(resize_bad_inputs_name_the_node) {
    static const char *ops[] = {"ResizeBilinear", "ResizeNearestNeighbor"};
    for (int k = 0; k < 2; k++) {
        check_bad(ops[k], img(1, 3, 4, 2), ints(1, D(2), (const int32_t[]){0, 3}), 0, 0, "output dimensions must be positive");
        check_bad(ops[k], img(1, 3, 4, 2), ints(1, D(2), (const int32_t[]){3, -2}), 0, 0, "output dimensions must be positive");
        check_bad(ops[k], img(1, 3, 4, 2), ints(1, D(3), (const int32_t[]){3, 3, 3}), 0, 0, "shape_t must have two elements[3]");
        check_bad(ops[k], img(1, 3, 4, 2), ints(2, D(1, 2), (const int32_t[]){3, 3}), 0, 0, "shape_t must be 1-dimensional[1,2]");
        check_bad(ops[k], tensor_of(DF_FLOAT, 3, D(2, 2, 1), xval), ints(1, D(2), (const int32_t[]){3, 3}), 0, 0,
                  "input must be 4-dimensional[2,2,1]");
        check_bad(ops[k], img(1, 3, 4, 0), ints(1, D(2), (const int32_t[]){3, 3}), 0, 0, "image must have at least one channel");
        check_bad(ops[k], img(1, 0, 4, 2), ints(1, D(2), (const int32_t[]){3, 3}), 0, 0, "input image must be of non-zero size");
        check_bad(ops[k], img(1, 3, 4, 2), ints(1, D(2), (const int32_t[]){3, 3}), 1, 1,
                  "If half_pixel_centers is True, align_corners must be False.");
    }
    check_bad("ResizeNearestNeighborGrad", img(1, 3, 4, 2), ints(1, D(2), (const int32_t[]){0, 3}), 0, 0, "shape_t's elements must be positive");
    check_bad("ResizeNearestNeighborGrad", tensor_of(DF_FLOAT, 3, D(2, 2, 1), xval), ints(1, D(2), (const int32_t[]){3, 3}), 0, 0,
              "input must be 4-dimensional[2,2,1]");

    /* ResizeBilinearGrad through constants: each message TensorFlow gives */
    struct { const int64_t *dy, *x; int rdy, rx, align, hpc; const char *needle; } bg[] = {
        {D(2, 2, 1), D(1, 3, 4, 2), 3, 4, 0, 0, "input_grad must be 4-dimensional[2,2,1]"},
        {D(1, 5, 7, 2), D(3, 4, 2), 4, 3, 0, 0, "original_image must be 4-dimensional[3,4,2]"},
        {D(1, 0, 7, 2), D(1, 3, 4, 2), 4, 4, 0, 0, "resized dimensions must be positive"},
        {D(1, 5, 7, 2), D(1, 0, 4, 2), 4, 4, 0, 0, "original dimensions must be positive"},
        {D(1, 5, 7, 2), D(1, 3, 4, 2), 4, 4, 1, 1, "If half_pixel_centers is True, align_corners must be False."},
    };
    for (int i = 0; i < LEN(bg); i++) {
        df_graph *g = df_graph_new();
        df_output in[2] = {df_placeholder(g, "dy", DF_FLOAT, -1, NULL), df_placeholder(g, "x", DF_FLOAT, -1, NULL)};
        df_output y = resize(g, "ResizeBilinearGrad", "bg", in[0], in[1], bg[i].align, bg[i].hpc);
        df_tensor *fv[2] = {tensor_of(DF_FLOAT, bg[i].rdy, bg[i].dy, dyval), tensor_of(DF_FLOAT, bg[i].rx, bg[i].x, xval)}, *out = NULL;
        df_status st;
        run_opts(g, 1, 2, in, fv, &y, 1, &out, &st);
        CHECK_STATUS(&st, DF_INVALID_ARGUMENT, bg[i].needle);
        CHECK_MSG(strstr(st.message, "{{node bg}}") != NULL, "%s", st.message);
        df_tensor_release(out);
        df_tensor_release(fv[0]);
        df_tensor_release(fv[1]);
        df_graph_free(g);
    }
    /* static shapes: refused while building, as TensorFlow's shape functions do */
    df_graph *g = df_graph_new();
    resize(g, "ResizeBilinear", "r3", df_placeholder(g, "a", DF_FLOAT, 3, D(2, 2, 1)), size_const(g, 2, D(3, 3)), 0, 0);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "Shape must be rank 4 but is rank 3");
    CHECK(strstr(df_graph_status(g)->message, "{{node r3}}") != NULL);
    df_graph_free(g);
    g = df_graph_new();
    resize(g, "ResizeNearestNeighbor", "s3", df_placeholder(g, "a", DF_FLOAT, 4, D(1, 2, 2, 1)), size_const(g, 3, D(3, 3, 3)), 0, 0);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "Dimension must be 2 but is 3");
    CHECK(strstr(df_graph_status(g)->message, "{{node s3}}") != NULL);
    df_graph_free(g);
    /* a type TensorFlow has no kernel for is refused while building */
    g = df_graph_new();
    df_tensor *bt = df_tensor_new(DF_BOOL, 4, D(1, 2, 2, 1), NULL);
    memset(df_tensor_data(bt), 0, df_tensor_nbytes(bt));
    resize(g, "ResizeBilinear", "rb", df_const(g, bt), size_const(g, 2, D(3, 3)), 0, 0);
    df_tensor_release(bt);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "{{node rb}}");
    df_graph_free(g);
}
