/*
 * y = x W^T (torch.nn.functional.linear without bias) for float32 row-major matrices,
 * on OpenBLAS, with the rows of x split over the OpenMP team that torch itself uses.
 *
 * Python twin: torch.nn.functional.linear (cacheprune/engine/linear.py falls back to it).
 *
 * Why: on the AMD machines this project is measured on, torch's MKL sgemm reaches about 90
 * GFLOP/s on the model's linear layers, OpenBLAS about 130. OpenBLAS's own thread pool cannot
 * be used beside torch's: each pool's idle threads spin while the other works, and a prefill
 * alternates between them hundreds of times. So every OpenMP thread of torch's team (the
 * process loads one libgomp) runs a single-threaded OpenBLAS sgemm on its block of rows.
 */
#include <stdint.h>
#include <omp.h>
#include <cblas.h>

/* scipy-openblas32 prefixes its symbols so that it never clashes with another BLAS. */
#define sgemm scipy_cblas_sgemm

/* OpenBLAS's own pool stays idle; this copy of the library (the scipy-openblas32 package) is
 * loaded for this kernel only, numpy and scipy carry their own. */
__attribute__((constructor)) static void blas_single_threaded(void) {
    scipy_openblas_set_num_threads(1);
}

/* out[m, n] = x[m, k] @ w[n, k]^T, with at most `threads` threads. */
void cp_linear(const float *x, const float *w, float *out,
               int64_t m, int64_t k, int64_t n, int threads) {
    if (threads > m) threads = (int)m;
    if (threads < 1) threads = 1;
    #pragma omp parallel num_threads(threads)
    {
        int64_t team = omp_get_num_threads(), me = omp_get_thread_num();
        int64_t rows = (m + team - 1) / team;
        int64_t start = me * rows;
        int64_t end = start + rows < m ? start + rows : m;
        if (start < end)
            sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(end - start), (int)n, (int)k,
                  1.0f, x + start * k, (int)k, w, (int)k, 0.0f, out + start * n, (int)n);
    }
}
