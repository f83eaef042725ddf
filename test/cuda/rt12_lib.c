// SPDX-License-Identifier: MIT
/*
 * A library built for the CUDA 12 runtime (linked against libcudart.so.12,
 * so its references are cudaMalloc@libcudart.so.12 ...), for a process
 * that also uses CUDA 13 (sim_app runtimes). Declared by hand, as a CUDA 12
 * header would: cudaGetDeviceProperties is cudaGetDeviceProperties_v2 with
 * CUDA 12's 1032-byte cudaDeviceProp (multiProcessorCount at 388).
 */
#include <stdio.h>
#include <string.h>

int cudaRuntimeGetVersion(int *v);
int cudaGetDeviceProperties_v2(void *prop, int device);
int cudaMalloc(void **p, size_t n);
int cudaMemcpy(void *dst, const void *src, size_t n, int kind);
int cudaMemset(void *p, int v, size_t n);
int cudaFree(void *p);

#define PROP12_SIZE 1032
#define PROP12_SMS  388

__attribute__((visibility("default"))) int rt12_report(char *out, size_t len)
{
	unsigned char prop[PROP12_SIZE + 64], host[4096] = { 0 };
	int v = 0, sms, guard_ok = 1, e;
	void *d = NULL;

	memset(prop, 0xab, sizeof(prop));
	cudaRuntimeGetVersion(&v);
	e = cudaGetDeviceProperties_v2(prop, 0);
	memcpy(&sms, prop + PROP12_SMS, sizeof(sms));
	for (size_t i = PROP12_SIZE; i < sizeof(prop); i++)
		guard_ok &= prop[i] == 0xab;
	if (!e)
		e = cudaMalloc(&d, sizeof(host));
	if (!e)
		e = cudaMemcpy(d, host, sizeof(host), 1 /* cudaMemcpyHostToDevice */);
	if (!e)
		e = cudaMemset(d, 0, sizeof(host));
	if (d)
		cudaFree(d);
	snprintf(out, len, "version %d, %d SMs, %s, %s, error %d", v, sms,
		 prop[0] ? (const char *)prop : "(no name)", guard_ok ? "within its struct" : "OVERRAN",
		 e);
	return v != 12080 || sms != 132 || !guard_ok || e;
}
