#!/usr/bin/python3
"""Fits the two polynomials of erf's composition (compiler/lower/lower_math.cpp,
used where the target has no erf instruction: NVPTX) and measures it.

  |x| <  0.921875: erf(x) = x + x * P(x^2),       P of degree 5
  |x| >= 0.921875: erf(x) = sign(x) (1 - 2^Q(t)), t = min(|x|, 4), Q of degree 7

Least squares weighted towards the largest error (Lawson's iteration) on
Chebyshev nodes, coefficients rounded to f32. The measurement evaluates the
composition in f32 with fma (each step rounded to f32) and an exact 2^x, on
200k points in [-6, 6] and 2k in [1e-30, 5], against Python's double erf;
prints the largest error in ulps and the coefficients (hex floats, as in
lower_math.cpp). Then measures the NVPTX machine's reduction of sin/cos
arguments to [-pi, pi] (compiler/target/nvptx.cpp, reduce_2pi: two fma
with 2 pi split in f32 parts) on 20k points in [-5000, 5000]: the largest
|sin(x) - sin(reduced x)| (sin in double). Needs numpy (Debian's python3-numpy): /usr/bin/python3.
"""
import numpy as np, math
erf = np.vectorize(math.erf); erfc = np.vectorize(math.erfc)
B = 0.921875
f32 = np.float32
def cheb(a, b, n): k = np.arange(n); return (a+b)/2 + (b-a)/2*np.cos(np.pi*(k+0.5)/n)
def lawson(xs, ys, deg, werr):
    w = np.ones_like(xs)
    V = np.vander(xs, deg+1)
    for it in range(60):
        c, *_ = np.linalg.lstsq(V*w[:,None], ys*w, rcond=None)
        e = np.abs(V@c - ys)*werr
        w = w*np.sqrt(e/e.max()+1e-4)
    return c
x = cheb(1e-5, B, 6000); s = x*x
y = erf(x)/x - 1
cs = lawson(s, y, 5, 1/(y+1)).astype(f32)
t = cheb(B, 4.0, 6000)
cl = lawson(t, np.log2(erfc(t)), 7, erfc(t)).astype(f32)
def fma(a,b,c): return f32(np.float64(a)*np.float64(b)+np.float64(c))
def ex2(v): return f32(2.0**np.float64(v))
def my_erf(xv):
    xv=f32(xv); tt=f32(abs(xv)); ss=f32(xv*xv)
    if tt < B:
        p=cs[0]
        for c in cs[1:]: p=fma(p,ss,c)
        return fma(xv,p,xv)
    tc = f32(4.0) if tt>4 else tt
    q=cl[0]
    for c in cl[1:]: q=fma(q,tc,c)
    return math.copysign(f32(1)-ex2(q), xv)
def ulp(v):
    v=abs(np.float32(v)); return np.spacing(v) if v>0 else np.float32(1e-45)
xs = np.concatenate([np.linspace(-6,6,200001).astype(f32), np.float32(10)**np.linspace(-30,0.7,2000).astype(f32)])
worst=0; wx=0
for xv in xs:
    ref=math.erf(float(xv)); got=float(my_erf(xv))
    u=abs(got-ref)/float(ulp(f32(ref)))
    if u>worst: worst,wx=u,xv
print("max ulp", worst, "at", wx)
print("small", [float(c).hex() for c in cs], list(cs))
print("large", [float(c).hex() for c in cl], list(cl))

# sin/cos argument reduction (nvptx.cpp reduce_2pi), fma emulated exactly.
from fractions import Fraction
def fma_exact(a, b, c):
    return f32(float(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))))
hi = f32(2 * math.pi)
lo = f32(2 * math.pi - float(hi))
worst = 0.0
for xv in np.linspace(-5000, 5000, 20001).astype(f32):
    k = f32(np.rint(f32(xv * f32(1 / (2 * math.pi)))))
    r = fma_exact(-k, lo, fma_exact(-k, hi, xv))
    worst = max(worst, abs(math.sin(float(xv)) - math.sin(float(r))))
print("sin/cos reduction: max |sin(x) - sin(reduced)| = %.3g = 2^%.1f for |x| <= 5000"
      % (worst, math.log2(worst)))
