import { checkPrerequisites } from '../global-setup.js';

/** The fault suite needs what the main suite needs (it starts its own stacks). */
export function setup() {
  checkPrerequisites();
}
