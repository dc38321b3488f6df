/** A credential in a plugin config: always a reference to a key of a Secret in the plugin's namespace. */
import { Type } from '@sinclair/typebox';

export const SecretKeyRefSchema = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 253,
      description: 'Name of the Secret, in the namespace of the GatewayPlugin.',
    }),
    key: Type.String({ minLength: 1, maxLength: 253, description: "Key within the Secret's data." }),
  },
  { additionalProperties: false, description: 'A value held in a Kubernetes Secret.' },
);
