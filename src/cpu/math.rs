//! float32 math for the CPU backend.

pub fn pow(x: f32, y: f32) -> f32 {
    x.powf(y)
}
pub fn tan(x: f32) -> f32 {
    x.tan()
}
pub fn exp(x: f32) -> f32 {
    x.exp()
}
pub fn log(x: f32) -> f32 {
    x.ln()
}
pub fn sin_slice(x: &[f32], out: &mut [f32]) {
    for (o, a) in out.iter_mut().zip(x) {
        *o = a.sin();
    }
}
pub fn cos_slice(x: &[f32], out: &mut [f32]) {
    for (o, a) in out.iter_mut().zip(x) {
        *o = a.cos();
    }
}
