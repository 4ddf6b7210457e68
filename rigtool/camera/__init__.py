"""rigtool.camera: one calibrated camera and printed fiducial tags instead of optical mocap.

Conventions (every module of this package)
------------------------------------------
- Pixel coordinates are OpenCV's: ``u`` to the right, ``v`` down, the centre of the top-left
  pixel at ``(0, 0)``; arrays of image points have shape ``[..., 2]`` in px.
- The camera frame is OpenCV's: origin at the projection centre, ``x`` right, ``y`` down,
  ``z`` along the optical axis (depth). ``X_cam = R_cam_body @ x_body + t_cam_body`` (m).
- A tag's frame (as cv2.aruco's square-marker convention): origin at the centre of the
  black square, ``x`` to the right of the printed image, ``y`` up, ``z`` out of the printed
  face; its corners 0..3 are top-left, top-right, bottom-right, bottom-left, at
  ``(-L/2, L/2)``, ``(L/2, L/2)``, ``(L/2, -L/2)``, ``(-L/2, -L/2)`` with ``L`` the edge
  length of the black square (m).
- The lab frame is the camera's, or that of a body of tags fixed in the lab (a board on
  the floor), as ``tags.toml`` says.
- SI units: m, s, rad; image noise in px.

Modules: ``model`` (camera.toml: intrinsics and distortion), ``aruco`` (dictionaries and
sub-pixel tag corners), ``tags`` (tags.toml), ``intrinsics`` (ChArUco calibration),
``pnp`` (a body's pose and its covariance from its tag corners), ``video`` (frames and
their container timestamps, reading past damage), ``timeline`` (frame numbers from
timestamps, lost and repeated frames, the rule that refuses a video too damaged),
``track`` (a video -> a capture), ``render`` (ray-cast images of textured planes), ``simvideo`` (a simulated
video of the rig with its truth).
"""
