fn main() {
  // Only the Node binding links against N-API symbols that Node itself provides.
  #[cfg(feature = "napi")]
  napi_build::setup();
}
