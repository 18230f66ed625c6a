//! The project-file reader (`harness.toml`): any bytes give a project file or a located error;
//! one that reads writes out to a file that reads again. The body is
//! `harness::fuzzing::project_file`, which the normal suite also runs on the seeds and findings.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::fuzzing::project_file(data);
});
